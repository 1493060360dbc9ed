package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/backoff"
)

// LetterSubscription is the subscription name of ingest's dead letters
// (tenant letters and ingest's poison pills alike).
const LetterSubscription = "ingest"

// maxLogged bounds the device-derived text one log line carries (a
// rejection's detail quotes device bytes); the dead letter keeps the rest.
const maxLogged = 256

// LetterStore records dead letters; *deadletter.Store is one.
type LetterStore interface {
	Record(ctx context.Context, l deadletter.Letter) error
	RecordPoison(ctx context.Context, l deadletter.Letter) error
}

var _ LetterStore = (*deadletter.Store)(nil)

// RejectionConfig bounds what rejected messages may cost ingest
// (docs/dead-letters.md). Zero fields take their defaults.
type RejectionConfig struct {
	// PerDevice is how many dead letters one gateway may write per Window;
	// default 20. The budget is keyed on the gateway the topic's thing
	// belongs to (the part before ':', which the gateway IoT policy binds
	// to the client's certificate), never on a name the device picks: a
	// gateway publishing under 60 made-up <gw>:* names shares one budget.
	// Rejections of bowls that are not registered yet use Unregistered
	// instead. The next rejection in
	// the window writes one summary letter (reason rate_limited, with that
	// message's bytes); the rest are acknowledged and only counted
	// (Observer's Suppressed, bowline_ingest_rejections_suppressed_total).
	PerDevice int
	// Window is the rate-limit window; default 1 min.
	Window time.Duration
	// Unregistered is how many events of bowls not registered yet
	// (unknown_thing) one gateway may have quarantined per hour; default
	// 1,000 (a bowl sends about 8 events a day). A bowl that publishes
	// before it is registered has every such event kept as a dead letter,
	// with its bytes, for `bowline dead-letters replay --source ingest`
	// once it is registered, instead of losing all but 20 a minute.
	Unregistered int
	// LetterAttempts is how many times a dead letter write is tried before
	// the rejected message is acknowledged without it (logged at ERROR with
	// its sha256, counted as lost); default 6, about 3 s of backoff.
	LetterAttempts int
	// MaxHeld is how many rejected messages may be held at once while
	// their dead letters are retried; default 10. A rejection that finds
	// every slot taken gets one attempt, so a dead-letter outage cannot
	// hold up every batch of every tenant.
	MaxHeld int
	// UnknownTTL is how long "thing not registered" is cached; default
	// 30 s (devices.CacheConfig).
	UnknownTTL time.Duration
	// CacheSize bounds the things cached and the things rate-limited;
	// default 10000 each.
	CacheSize int
}

func (c RejectionConfig) validate() error {
	if c.PerDevice < 0 || c.Window < 0 || c.Unregistered < 0 || c.LetterAttempts < 0 || c.MaxHeld < 0 || c.UnknownTTL < 0 || c.CacheSize < 0 {
		return fmt.Errorf("ingest: Rejections %+v: sizes and durations must not be negative", c)
	}
	return nil
}

// setDefaults fills the zero fields with their defaults.
func (c *RejectionConfig) setDefaults() {
	if c.PerDevice == 0 {
		c.PerDevice = 20
	}
	if c.Unregistered == 0 {
		c.Unregistered = 1000
	}
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.LetterAttempts == 0 {
		c.LetterAttempts = 6
	}
	if c.MaxHeld == 0 {
		c.MaxHeld = 10
	}
	if c.UnknownTTL == 0 {
		c.UnknownTTL = 30 * time.Second
	}
	if c.CacheSize == 0 {
		c.CacheSize = 10000
	}
}

// rejected dead-letters a rejection of m and acknowledges m; other errors
// are returned, m unacknowledged. A dead letter that cannot be written
// within the bounds of Config.Rejections does not keep m: it is
// acknowledged anyway, logged and counted (writeLetter). Only the end of
// ctx (shutdown) leaves a rejected message unacknowledged.
func (in *Ingester) rejected(ctx context.Context, m message, err error) error {
	var rej *Rejection
	if !errors.As(err, &rej) {
		return err
	}
	in.log.Info("message rejected", "topic", deadletter.Text(m.topic, maxLogged), "reason", rej.Reason,
		"detail", deadletter.Text(rej.Detail, maxLogged), "bytes", len(m.raw))
	var werr error
	limiter := in.limiter
	if rej.Reason == ReasonUnknownThing {
		limiter = in.quarantine
	}
	switch v, start := limiter.Admit(limitKey(m), in.cfg.Now()); v {
	case deadletter.Write:
		werr = in.writeLetter(ctx, m, rej.Reason, in.letter(m, rej))
	case deadletter.Summary:
		in.log.Warn("device over its dead-letter limit: one summary letter for the rest of the window", "topic", deadletter.Text(m.topic, maxLogged),
			"limit", in.cfg.Rejections.PerDevice, "window", in.cfg.Rejections.Window)
		werr = in.writeLetter(ctx, m, rej.Reason, in.summary(m, rej, start))
	default:
		in.cfg.Observer.Suppressed(rej.Reason)
	}
	if werr != nil {
		return werr
	}
	in.cfg.Observer.Rejected(m.kind, rej.Reason)
	// A rejected message still used up its seqs: record them (when the
	// payload names them and the tenant is verified) so they are no gap.
	in.gaps.Record(func() {
		in.cfg.Observer.Acked(Ack{Kind: m.kind, Tenant: m.tp.Tenant, Thing: m.tp.Thing})
		if m.ack != nil {
			m.ack()
		}
	}, rejectedSeqs(m)...)
	return nil
}

// letter is the dead letter of m's rejection. When m is verified, its
// topic's tenant is the thing's registered tenant and the letter lives
// under it, keyed by the payload's digest (a redelivery overwrites it);
// otherwise the message has no trustworthy tenant and becomes a poison
// pill (keys.go). Either keeps m's bytes whole (Raw, binary) and a bounded
// reason.
func (in *Ingester) letter(m message, rej *Rejection) deadletter.Letter {
	sum := sha256.Sum256(m.raw)
	l := deadletter.Letter{
		Error:        deadletter.Text(rej.Error(), deadletter.MaxError),
		Raw:          m.raw,
		RawSHA256:    hex.EncodeToString(sum[:]),
		RawSize:      len(m.raw),
		MessageID:    m.topic,
		EventType:    deadletter.Text(m.typ, 128),
		Subscription: LetterSubscription,
		At:           in.cfg.Now().UTC(),
	}
	if !m.verified {
		l.MessageID = poisonMessageID(m.topic, m.raw)
		l.Poison = true
		return l
	}
	l.Tenant = m.tp.Tenant
	l.EventID = letterEventID(m.tp.Thing, m.kind, m.raw)
	return l
}

// summary is the one letter that stands for a device's rejections past
// the limit in the window from start: m's letter under a per-window id.
func (in *Ingester) summary(m message, rej *Rejection, start time.Time) deadletter.Letter {
	l := in.letter(m, &Rejection{Reason: ReasonRateLimited, Detail: fmt.Sprintf(
		"more than %d rejections from this device in the %s from %s; this letter keeps the first one past the limit (%s), the rest of the window is counted, not stored",
		in.cfg.Rejections.PerDevice, in.cfg.Rejections.Window, start.UTC().Format(time.RFC3339), rej.Error())})
	id := "rate_limited-" + strconv.FormatInt(start.Unix(), 10)
	if l.Poison {
		l.MessageID = m.topic + "#" + id
	} else {
		l.EventID = m.tp.Thing + "/" + m.kind + "/" + id
	}
	return l
}

// writeLetter writes l, retrying failures that may recover with backoff
// while m stays unacknowledged, but at most Rejections.LetterAttempts times
// and only while it holds one of Rejections.MaxHeld slots: a dead letter
// that cannot be written (dead_letters denied or missing, say) must not
// hold rejected messages until they stall every batch and stop ingest for
// every tenant. Past the bounds m is acknowledged without
// a letter: logged at ERROR with its sha256 and size (never its bytes) and
// counted (Observer's LetterLost: alarm on it). It returns an error only
// when ctx ends first, m unacknowledged.
func (in *Ingester) writeLetter(ctx context.Context, m message, reason Reason, l deadletter.Letter) error {
	held := false
	defer func() {
		if held {
			<-in.heldLetters
		}
	}()
	for attempt := 1; ; attempt++ {
		var err error
		if l.Poison {
			err = in.letters.RecordPoison(ctx, l)
		} else {
			err = in.letters.Record(ctx, l)
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("dead-letter a message from %s: %w", m.topic, err)
		}
		cause := failureCause(err)
		give := attempt >= in.cfg.Rejections.LetterAttempts || !mayRecover(err)
		if !give && !held {
			select {
			case in.heldLetters <- struct{}{}:
				held = true
			default:
				give = true
			}
		}
		if give {
			in.log.Error("dead letter not written: rejected message acknowledged without it", "topic", deadletter.Text(m.topic, maxLogged),
				"reason", reason, "sha256", l.RawSHA256, "bytes", l.RawSize, "attempts", attempt, "cause", cause, "err", err)
			in.cfg.Observer.LetterLost(reason)
			return nil
		}
		in.cfg.Observer.Held("dead_letter", cause)
		in.log.Warn("dead letter not written; retrying while the message is held", "topic", deadletter.Text(m.topic, maxLogged),
			"attempt", attempt, "cause", cause, "err", err)
		policy := backoff.Policy{Base: 50 * time.Millisecond, Max: in.cfg.RetryMax, Jitter: 1}
		if policy.Wait(ctx, attempt-1) != nil {
			return fmt.Errorf("dead-letter a message from %s: %w", m.topic, err)
		}
	}
}

// mayRecover reports whether a failed dead-letter write may succeed if
// tried again: anything but DynamoDB refusing the item itself
// (ValidationException, e.g. an item over 400 KB).
func mayRecover(err error) bool {
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		return false
	}
	var ccf *types.ConditionalCheckFailedException
	return !errors.As(err, &ccf)
}

// limitKey is the rate-limit key of m: the gateway of its topic's thing
// (with the tenant when verified), or one key for every topic that did not
// parse.
func limitKey(m message) string {
	gw, _, _ := strings.Cut(m.tp.Thing, string(wire.ThingSeparator))
	switch {
	case m.verified:
		return m.tp.Tenant + "/" + gw
	case gw != "":
		return "unverified/" + gw
	}
	return "unparsed"
}

// newRejectLimiter is the budget of rejections: PerDevice letters per
// gateway and Window.
func newRejectLimiter(c RejectionConfig) *deadletter.Budget {
	return deadletter.NewBudget(c.PerDevice, c.Window, c.CacheSize)
}

// newQuarantine is the budget of unregistered bowls' rejections:
// Unregistered letters per gateway an hour.
func newQuarantine(c RejectionConfig) *deadletter.Budget {
	return deadletter.NewBudget(c.Unregistered, time.Hour, c.CacheSize)
}
