package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/bowline-iot/bowline/engine/deadletter"
)

// LetterSubscription is the subscription name of ingest's tenant-scoped dead
// letters.
const LetterSubscription = "ingest"

// maxLetterBody bounds the payload copied into a dead letter (a DynamoDB item
// is at most 400 KB).
const maxLetterBody = 64 << 10

// LetterStore records dead letters; *deadletter.Store is one.
type LetterStore interface {
	Record(ctx context.Context, l deadletter.Letter) error
	RecordPoison(ctx context.Context, l deadletter.Letter) error
}

var _ LetterStore = (*deadletter.Store)(nil)

func shortDigest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func letterBody(raw []byte) string {
	if len(raw) > maxLetterBody {
		raw = raw[:maxLetterBody]
	}
	return string(raw)
}

// deadLetter records a rejected message. When verified, tenant is the
// thing's registered tenant and the letter lives under it, keyed by the
// message digest (a redelivery overwrites it); otherwise the message has no
// trustworthy tenant and becomes a poison pill.
func (in *Ingester) deadLetter(ctx context.Context, topic, kind, tenant, thing string, verified bool, raw []byte, rej *Rejection, typ string) error {
	l := deadletter.Letter{
		Error:     rej.Error(),
		Body:      letterBody(raw),
		MessageID: topic,
		EventType: typ,
		At:        in.cfg.Now().UTC(),
	}
	if !verified {
		l.MessageID = topic + "#" + shortDigest(raw)
		return in.letters.RecordPoison(ctx, l)
	}
	l.Tenant = tenant
	l.EventID = thing + "/" + kind + "/" + shortDigest(raw)
	l.Subscription = LetterSubscription
	return in.letters.Record(ctx, l)
}
