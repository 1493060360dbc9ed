package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/engine/deadletter"
)

// LetterSubscription is the subscription name of the consumer's dead
// letters.
const LetterSubscription = "durable"

// maxLogged bounds the device-derived text one log line carries.
const maxLogged = 256

// LetterStore records dead letters; *deadletter.Store is one. It must be
// safe for concurrent use.
type LetterStore interface {
	Record(ctx context.Context, l deadletter.Letter) error
	RecordPoison(ctx context.Context, l deadletter.Letter) error
}

var _ LetterStore = (*deadletter.Store)(nil)

// letterBody is the Body of a letter: the record's envelope without its
// payload (the letter's Raw), enough to put the record back into the
// stream (docs/telemetry-path.md, "The consumer").
type letterBody struct {
	V          int    `json:"v"`
	Tenant     string `json:"tenant,omitempty"`
	Gateway    string `json:"gateway,omitempty"`
	ReceivedAt int64  `json:"received_at,omitempty"`
	Shard      string `json:"shard"`
	Sequence   string `json:"sequence_number"`
	Partition  string `json:"partition_key"`
}

// rejected dead-letters r's rejection rej, rate-limited per authenticated
// gateway. It returns an error only when the letter could not be written
// and may be on a retry (the record is then retried); a letter DynamoDB
// refuses for good is logged and counted as lost.
func (c *Consumer) rejected(ctx context.Context, r Record, e envelope, rej *Rejection) error {
	c.log.Info("record rejected", "record", r.describe(), "tenant", deadletter.Text(e.Tenant, maxLogged), "gateway", deadletter.Text(e.Gateway, maxLogged),
		"reason", rej.Reason, "detail", deadletter.Text(rej.Detail, maxLogged))
	l := c.letter(r, e, rej)
	switch v, start := c.limiter.Admit(limitKey(r, e), c.cfg.Now()); v {
	case deadletter.Write:
	case deadletter.Summary:
		c.log.Warn("gateway over its dead-letter limit: one summary letter for the rest of the window", "gateway", deadletter.Text(limitKey(r, e), maxLogged),
			"limit", c.cfg.Rejections.PerGateway, "window", c.cfg.Rejections.Window)
		l = c.summary(r, e, rej, start)
	default:
		c.obs.Rejected(rej.Reason, false)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	var err error
	if l.Poison {
		err = c.letters.RecordPoison(cctx, l)
	} else {
		err = c.letters.Record(cctx, l)
	}
	if err != nil && mayRecover(err) {
		return fmt.Errorf("dead-letter record %s: %w", r.describe(), err)
	}
	if err != nil {
		c.log.Error("dead letter refused: rejected record dropped without it", "record", r.describe(), "sha256", l.RawSHA256, "bytes", l.RawSize, "err", err)
		c.obs.LetterLost()
	}
	c.obs.Rejected(rej.Reason, true)
	return nil
}

// letter is the dead letter of r. With a decoded envelope it lives under the
// record's tenant (authenticated by the IoT policy), keyed by the
// gateway and the payload's digest, so a redelivery overwrites it;
// otherwise it is a poison pill. Raw is the MQTT payload (at most 128 KB,
// kept whole) or, when the envelope does not decode, the record's bytes.
func (c *Consumer) letter(r Record, e envelope, rej *Rejection) deadletter.Letter {
	raw := e.Payload
	if e.Tenant == "" || e.Gateway == "" || raw == nil {
		raw = r.Data
	}
	sum := sha256.Sum256(raw)
	body, _ := json.Marshal(letterBody{V: e.V, Tenant: e.Tenant, Gateway: e.Gateway, ReceivedAt: e.ReceivedAt, Shard: r.ShardID, Sequence: r.SequenceNumber, Partition: r.PartitionKey})
	l := deadletter.Letter{
		Error:        deadletter.Text(rej.Error(), deadletter.MaxError),
		Body:         deadletter.Text(string(body), deadletter.MaxBody),
		Raw:          raw,
		RawSHA256:    hex.EncodeToString(sum[:]),
		RawSize:      len(raw),
		MessageID:    r.ShardID + "/" + r.SequenceNumber,
		EventType:    "telemetry",
		Subscription: LetterSubscription,
		At:           c.cfg.Now().UTC(),
	}
	if e.Tenant == "" || e.Gateway == "" {
		l.Poison = true
		return l
	}
	l.Tenant = e.Tenant
	l.EventID = letterEventID(e.Gateway, l.RawSHA256)
	return l
}

// summary is the one letter that stands for a gateway's rejections past
// the limit in the window from start.
func (c *Consumer) summary(r Record, e envelope, rej *Rejection, start time.Time) deadletter.Letter {
	l := c.letter(r, e, &Rejection{Reason: ReasonRateLimited, Detail: fmt.Sprintf(
		"more than %d rejections from this gateway in the %s from %s; this letter keeps the first one past the limit (%s), the rest of the window is counted, not stored",
		c.cfg.Rejections.PerGateway, c.cfg.Rejections.Window, start.UTC().Format(time.RFC3339), rej.Error())})
	id := "rate_limited-" + strconv.FormatInt(start.Unix(), 10)
	if l.Poison {
		l.MessageID += "#" + id
	} else {
		l.EventID = e.Gateway + "/batch/" + id
	}
	return l
}

// mayRecover reports whether a failed letter write may succeed if tried
// again: anything but DynamoDB refusing the item itself.
func mayRecover(err error) bool {
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		return false
	}
	var ccf *types.ConditionalCheckFailedException
	return !errors.As(err, &ccf)
}

// limitKey is the rate-limit key of a rejected record: its authenticated
// tenant and gateway from the envelope, never a name from the payload;
// for an envelope that does not decode, the record's partition key (the
// gateway, set by the rule from the topic).
func limitKey(r Record, e envelope) string {
	if e.Tenant != "" && e.Gateway != "" {
		return e.Tenant + "/" + e.Gateway
	}
	return "partition/" + r.PartitionKey
}

// newRejectLimiter is the budget of rejections: PerGateway letters per
// gateway and Window.
func newRejectLimiter(c RejectionConfig) *deadletter.Budget {
	return deadletter.NewBudget(c.PerGateway, c.Window, c.CacheSize)
}
