package outbox

import "time"

// Observer is told what the outbox does (metrics: status.Metrics). Calls
// come from the writer goroutine and must not block. Embed NopObserver to
// observe only some calls.
type Observer interface {
	// Committed is called after each group commit with the number of
	// operations it carried, the entries it appended and how long it took.
	Committed(ops, entries int, took time.Duration)
	// Dropped is called for every run of telemetry dropped or events
	// expired.
	Dropped(lane Lane, thing string, count int, reason string)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Committed(int, int, time.Duration) {}
func (NopObserver) Dropped(Lane, string, int, string) {}
