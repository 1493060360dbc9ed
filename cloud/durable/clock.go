package durable

import "time"

// Clock fixes: why the consumer corrected a gateway's times (the metric's
// label), the rules of cloud/ingest (docs/clock.md).
const (
	// ClockAhead: sent_at lay more than MaxFutureSkew after the rule's
	// received_at. Transit only ever delays, so the gateway's clock was
	// ahead by at least that much.
	ClockAhead = "ahead"
	// ClockUnset: sent_at lay before MinPlausibleTime; the clock was
	// never set.
	ClockUnset = "unset"
)

// MinPlausibleTime is the earliest time a gateway clock can truly show.
var MinPlausibleTime = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// clockFix is the verdict on the clock of the gateway that sent one
// record: Skew is its clock minus received_at; corrected times are the
// gateway's minus Skew.
type clockFix struct {
	Reason string
	Skew   time.Duration
}

// judgeClock judges a payload stamped sentAt by the gateway and received by
// the rule at recv. A payload without sent_at is never corrected, nor is a
// clock behind by less than the unset test: a delayed resend looks exactly
// like it.
func judgeClock(sentAt, recv time.Time, maxAhead time.Duration) clockFix {
	if sentAt.IsZero() {
		return clockFix{}
	}
	skew := sentAt.Sub(recv)
	switch {
	case skew > maxAhead:
		return clockFix{Reason: ClockAhead, Skew: skew}
	case sentAt.Before(MinPlausibleTime) && !sentAt.Before(time.Unix(0, 0)):
		return clockFix{Reason: ClockUnset, Skew: skew}
	}
	return clockFix{}
}

// correct maps a time of the gateway's clock onto the rule's.
func (f clockFix) correct(t time.Time) time.Time {
	if f.Reason == "" {
		return t.UTC()
	}
	return t.Add(-f.Skew).UTC()
}

// gatewayNow is the gateway's clock at a record: its sent_at, or for a
// payload without one its latest sample time, or received_at. It measures
// the age of holes (gaps.go), so a retry of the same records judges the
// same way whatever the wall clock says.
func (d decoded) gatewayNow(f clockFix) time.Time {
	if !d.sentAt.IsZero() {
		return f.correct(d.sentAt)
	}
	var last time.Time
	for _, s := range d.series {
		for _, x := range s.samples {
			if x.at.After(last) {
				last = x.at
			}
		}
	}
	if last.IsZero() {
		return d.receivedAt
	}
	return f.correct(last)
}
