package ingest

import (
	"context"

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

func letterBody(raw []byte) string {
	if len(raw) > maxLetterBody {
		raw = raw[:maxLetterBody]
	}
	return string(raw)
}

// deadLetter records m's rejection. When m is verified, its topic's tenant
// is the thing's registered tenant and the letter lives under it, keyed by
// the payload's digest (a redelivery overwrites it); otherwise the message
// has no trustworthy tenant and becomes a poison pill (keys.go).
func (in *Ingester) deadLetter(ctx context.Context, m message, rej *Rejection) error {
	l := deadletter.Letter{
		Error:     rej.Error(),
		Body:      letterBody(m.raw),
		MessageID: m.topic,
		EventType: m.typ,
		At:        in.cfg.Now().UTC(),
	}
	if !m.verified {
		l.MessageID = poisonMessageID(m.topic, m.raw)
		return in.letters.RecordPoison(ctx, l)
	}
	l.Tenant = m.tp.Tenant
	l.EventID = letterEventID(m.tp.Thing, m.kind, m.raw)
	l.Subscription = LetterSubscription
	return in.letters.Record(ctx, l)
}
