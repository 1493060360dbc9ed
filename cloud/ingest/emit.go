package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/gowebpki/jcs"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
)

// payloadDigest is sha256 of the RFC 8785 form of the message without its
// sent_at, so redeliveries that differ only in whitespace, key order or
// the time they were sent match.
func payloadDigest(raw []byte) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", err
	}
	if _, ok := obj["sent_at"]; ok {
		delete(obj, "sent_at")
		var err error
		if raw, err = json.Marshal(obj); err != nil {
			return "", err
		}
	}
	c, err := jcs.Transform(raw)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(c)
	return hex.EncodeToString(h[:]), nil
}

// eventPayload is the engine payload of a device event: its data fields and
// where it came from, and the clock correction when ingest made one.
func eventPayload(ev wire.EventMessage, fix ClockFix) (map[string]any, error) {
	var p map[string]any
	if err := json.Unmarshal(ev.Data, &p); err != nil {
		return nil, err
	}
	if p == nil {
		p = map[string]any{}
	}
	added := catalog.Ingested{Thing: ev.Thing, DeviceEventID: ev.ID, DeviceSeq: ev.Seq, DeviceAt: ev.At.UTC()}
	if fix.Reason != "" {
		skew := fix.Skew.Milliseconds()
		added.ClockFix, added.ClockSkewMS = fix.Reason, &skew
	}
	// The data's own fields are edge/wire's and the added ones catalog's:
	// the two field sets are disjoint (catalog.TestDevicePayloadFields).
	b, err := json.Marshal(added)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// emitOutcome says what became of a device event.
type emitOutcome int

const (
	emitted emitOutcome = iota
	duplicate
)

// emitEvent emits ev for tenant idempotently. A repeat of an emitted event
// is a duplicate; a repeat of its key with another payload is a
// ReasonConflict rejection. Other errors are transient or engine rejections.
func (in *Ingester) emitEvent(ctx context.Context, tenant string, ev wire.EventMessage, fix ClockFix, raw []byte) (emitOutcome, error) {
	digest, err := payloadDigest(raw)
	if err != nil {
		return 0, reject(ReasonMalformedJSON, "canonicalize: %v", err)
	}
	payload, err := eventPayload(ev, fix)
	if err != nil {
		return 0, reject(ReasonInvalid, "data: %v", err)
	}
	// The digest rides on the engine's dedup row of the event's
	// idempotency key (Event.Fingerprint), written in the emit's
	// transaction, so it exists exactly when the event does.
	ectx := engine.WithActor(engine.WithTenant(ctx, tenant), "device:"+ev.Thing)
	_, err = in.emitter.EmitEvent(ectx, engine.Event{Type: ev.Type, Payload: payload, IdempotencyKey: IdempotencyKey(ev.Thing, ev.ID), Fingerprint: digest})
	var dup *engine.DuplicateError
	switch {
	case err == nil:
		return emitted, nil
	case errors.As(err, &dup):
		first, found := dup.Fingerprint, dup.Fingerprint != ""
		if !found {
			// Emitted before digests rode on the dedup row: its own row.
			if first, found, err = in.digestOf(ctx, tenant, ev.Thing, ev.ID); err != nil {
				return 0, err
			}
		}
		if found && first != digest {
			return 0, &Rejection{Reason: ReasonConflict, Detail: fmt.Sprintf("event %s of %s was emitted as %s with another payload (digest %s, now %s)", ev.ID, ev.Thing, dup.EventID, first[:16], digest[:16])}
		}
		return duplicate, nil
	case errors.Is(err, engine.ErrUnknownType):
		return 0, reject(ReasonUnknownType, "%v", err)
	case errors.Is(err, engine.ErrInvalidPayload), errors.Is(err, engine.ErrPayloadTooLarge), errors.Is(err, engine.ErrRejected), errors.Is(err, engine.ErrInvalidType):
		return 0, reject(ReasonInvalid, "%v", err)
	}
	return 0, err
}

// digestOf reads the digest row ingest put beside an event emitted
// before the digest rode on the engine's dedup row (Event.Fingerprint);
// such rows expire DigestTTL after they were written.
func (in *Ingester) digestOf(ctx context.Context, tenant, thing, id string) (string, bool, error) {
	out, err := in.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(in.cfg.Names.InboxTable()),
		Key:            digestKey(tenant, thing, id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", false, fmt.Errorf("read digest of %s event %s: %w", thing, id, err)
	}
	v, ok := out.Item["digest"].(*types.AttributeValueMemberS)
	if !ok {
		return "", false, nil
	}
	return v.Value, true, nil
}

// raiseGap emits bowl.data_gap once per (thing, lane, range).
func (in *Ingester) raiseGap(ctx context.Context, tenant string, g DataGap) error {
	ectx := engine.WithActor(engine.WithTenant(ctx, tenant), "ingest")
	_, err := in.emitter.EmitEvent(ectx, engine.Event{Type: catalog.TypeDataGap, Payload: g, IdempotencyKey: gapIdempotencyKey(g)})
	if err != nil && !errors.Is(err, engine.ErrDuplicate) {
		return err
	}
	if err == nil {
		in.cfg.Observer.GapRaised(g.Lane)
		in.log.Warn("data gap", "tenant", tenant, "thing", g.Thing, "lane", g.Lane, "from_seq", g.FromSeq, "to_seq", g.ToSeq, "missing_since", g.MissingSince)
	}
	return nil
}
