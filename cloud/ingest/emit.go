package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/gowebpki/jcs"

	"github.com/bowline-iot/bowline/engine"
)

// DigestTTL is how long a device event's digest row is kept: as long as the
// engine remembers the idempotency key (engine.Config.DedupTTL default).
const DigestTTL = 30 * 24 * time.Hour

// IdempotencyKey is the engine idempotency key of thing's device event id.
func IdempotencyKey(thing, id string) string { return thing + "/" + id }

// DigestPK is the inbox-table key of the digest row of a device event.
func DigestPK(tenant, thing, id string) string {
	return "INGEST#" + tenant + "#" + IdempotencyKey(thing, id)
}

// payloadDigest is sha256 of the RFC 8785 form of the message, so
// redeliveries that differ only in whitespace or key order match.
func payloadDigest(raw []byte) (string, error) {
	c, err := jcs.Transform(raw)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(c)
	return hex.EncodeToString(h[:]), nil
}

// eventPayload is the engine payload of a device event: its data fields and
// where it came from.
func eventPayload(ev DeviceEvent) (map[string]any, error) {
	var p map[string]any
	if err := json.Unmarshal(ev.Data, &p); err != nil {
		return nil, err
	}
	if p == nil {
		p = map[string]any{}
	}
	p["thing"] = ev.Thing
	p["device_event_id"] = ev.ID
	p["device_seq"] = ev.Seq
	p["device_at"] = ev.At.UTC().Format(time.RFC3339Nano)
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
func (in *Ingester) emitEvent(ctx context.Context, tenant string, ev DeviceEvent, raw []byte) (emitOutcome, error) {
	digest, err := payloadDigest(raw)
	if err != nil {
		return 0, reject(ReasonMalformedJSON, "canonicalize: %v", err)
	}
	payload, err := eventPayload(ev)
	if err != nil {
		return 0, reject(ReasonInvalid, "data: %v", err)
	}
	now := in.cfg.Now().UTC()
	write := engine.Write{Put: &types.Put{
		TableName: aws.String(in.cfg.Names.InboxTable()),
		Item: map[string]types.AttributeValue{
			"pk":          &types.AttributeValueMemberS{Value: DigestPK(tenant, ev.Thing, ev.ID)},
			"digest":      &types.AttributeValueMemberS{Value: digest},
			"type":        &types.AttributeValueMemberS{Value: ev.Type},
			"device_seq":  &types.AttributeValueMemberN{Value: strconv.FormatUint(ev.Seq, 10)},
			"received_at": &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			"ttl":         &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(DigestTTL).Unix(), 10)},
		},
	}}
	ectx := engine.WithActor(engine.WithTenant(ctx, tenant), "device:"+ev.Thing)
	_, err = in.emitter.EmitEvent(ectx, engine.Event{Type: ev.Type, Payload: payload, Writes: []engine.Write{write}, IdempotencyKey: IdempotencyKey(ev.Thing, ev.ID)})
	var dup *engine.DuplicateError
	switch {
	case err == nil:
		return emitted, nil
	case errors.As(err, &dup):
		first, found, err := in.digestOf(ctx, tenant, ev.Thing, ev.ID)
		if err != nil {
			return 0, err
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

func (in *Ingester) digestOf(ctx context.Context, tenant, thing, id string) (string, bool, error) {
	out, err := in.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(in.cfg.Names.InboxTable()),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: DigestPK(tenant, thing, id)}},
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
	key := fmt.Sprintf("%s/gap/%s/%d-%d", g.Thing, g.Lane, g.FromSeq, g.ToSeq)
	ectx := engine.WithActor(engine.WithTenant(ctx, tenant), "ingest")
	_, err := in.emitter.EmitEvent(ectx, engine.Event{Type: TypeDataGap, Payload: g, IdempotencyKey: key})
	if err != nil && !errors.Is(err, engine.ErrDuplicate) {
		return err
	}
	if err == nil {
		in.cfg.Observer.GapRaised(g.Lane)
		in.log.Warn("data gap", "tenant", tenant, "thing", g.Thing, "lane", g.Lane, "from_seq", g.FromSeq, "to_seq", g.ToSeq, "missing_since", g.MissingSince)
	}
	return nil
}
