package recordchange

// Observer is told what the consumer does; Metrics is the Prometheus one.
// Calls come from many goroutines and must not block. Embed NopObserver to
// observe only some calls.
type Observer interface {
	// Handled: subscription's handler ran with outcome ("ok", "error").
	Handled(subscription, outcome string)
	// BadRecord: a record-change message did not decode and was dropped.
	BadRecord()
	// Unmatched: a row change of eventType matched no BEST_EFFORT
	// subscription.
	Unmatched(eventType string)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Handled(string, string) {}
func (NopObserver) BadRecord()             {}
func (NopObserver) Unmatched(string)       {}

var _ Observer = (*Metrics)(nil)

func (m *Metrics) Handled(sub, outcome string) { m.handled.WithLabelValues(sub, outcome).Inc() }
func (m *Metrics) BadRecord()                  { m.bad.Inc() }
func (m *Metrics) Unmatched(typ string)        { m.unmatched.WithLabelValues(typ).Inc() }
