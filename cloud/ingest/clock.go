package ingest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Clock fixes: why ingest corrected a gateway's times (ClockFix.Reason,
// the clock_fix field downstream and the metric's label).
const (
	// ClockAhead: the message's sent_at lay more than MaxFutureSkew after
	// its receipt. Transit only ever delays a message, so the gateway's
	// clock was ahead by at least that much.
	ClockAhead = "ahead"
	// ClockUnset: sent_at lay before MinPlausibleTime; the gateway's clock
	// was never set (a board booted at 1970 without a real-time clock).
	ClockUnset = "unset"
)

// MinPlausibleTime is the earliest time a gateway clock can truly show: no
// Bowline gateway ran before it. A sent_at before it means the clock was
// never set.
var MinPlausibleTime = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// ClockFix is ingest's verdict on the clock of the gateway that sent one
// message. docs/clock.md says when a correction is safe.
type ClockFix struct {
	// Reason is ClockAhead or ClockUnset, or "" when the times stand.
	Reason string
	// Skew is the gateway's clock minus the receive time, from sent_at;
	// zero when Reason is "". Corrected times are the message's minus Skew.
	Skew time.Duration
}

// clockFix judges a message stamped sentAt by the gateway and received at
// recv. A message without sent_at (an older gateway) is never corrected.
// A clock behind by less than the unset test is never corrected either:
// a message delayed in transit (a QoS 1 redelivery after an outage) looks
// exactly like it, and past times are accepted as they are.
func clockFix(sentAt, recv time.Time, lim Limits) ClockFix {
	if sentAt.IsZero() {
		return ClockFix{}
	}
	skew := sentAt.Sub(recv)
	switch {
	case skew > lim.MaxFutureSkew:
		return ClockFix{Reason: ClockAhead, Skew: skew}
	case sentAt.Before(MinPlausibleTime) && !sentAt.Before(time.Unix(0, 0)):
		// Before 1970 is no gateway clock (and would overflow the skew).
		return ClockFix{Reason: ClockUnset, Skew: skew}
	}
	return ClockFix{}
}

// correct maps a time of the gateway's clock onto ingest's.
func (f ClockFix) correct(t time.Time) time.Time { return t.Add(-f.Skew).UTC() }

// correctEvent applies f to e's time and to the timestamp fields of its
// data (wire.MapTimes; e was validated by wire.Decode).
func (f ClockFix) correctEvent(e *wire.EventMessage) error {
	if f.Reason == "" {
		return nil
	}
	e.At = f.correct(e.At)
	d, err := wire.Decode(e.Type, e.Data, wire.DecodeOptions{})
	if err != nil {
		return fmt.Errorf("correct clock of event %s: %w", e.ID, err)
	}
	data, err := json.Marshal(wire.MapTimes(d, f.correct))
	if err != nil {
		return fmt.Errorf("correct clock of event %s: %w", e.ID, err)
	}
	e.Data = data
	return nil
}

// clause names the clock a rejection's receipt time is on.
func (f ClockFix) clause() string {
	if f.Reason == "" {
		return ""
	}
	return fmt.Sprintf(" on the gateway's clock (%s by %s)", f.Reason, f.Skew)
}

// clockFixed logs a correction; Observer.Acked counts it.
func (in *Ingester) clockFixed(tp wire.Topic, fix ClockFix) {
	if fix.Reason != "" {
		in.log.Debug("gateway clock wrong; times corrected from sent_at", "tenant", tp.Tenant, "thing", tp.Thing, "kind", tp.Kind, "fix", fix.Reason, "skew", fix.Skew)
	}
}
