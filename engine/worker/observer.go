package worker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Claim outcomes reported to Observer.Claim.
const (
	ClaimTaken     = "claimed"
	ClaimCompleted = "already_completed"
	ClaimDead      = "dead"
	ClaimHeld      = "held"
	ClaimError     = "error"
)

// Handler outcomes reported to Observer.Handled.
const (
	HandledOK    = "ok"
	HandledRetry = "retry"
	HandledDead  = "dead"
	HandledLost  = "lease_lost"
)

// Observer hears what the worker does; Metrics is the Prometheus one. Its
// methods must be safe for concurrent use and must not block. Embed
// NopObserver to observe only some calls.
type Observer interface {
	Received(n int)
	Claim(subscription, outcome string)
	Handled(subscription, outcome string, d time.Duration)
	DeadLetter(subscription string)
	Poison()
	Unmatched(eventType string)
	Deleted()
	ForwardedToDLQ()

	// How the worker rides out faults:

	// InfraRetry counts a retry of an operation ("claim", "complete",
	// "DeleteMessageBatch", ...) after an infrastructure fault, with the
	// message held.
	InfraRetry(op string)
	// Extended counts visibility extensions of held messages.
	Extended(n int)
	// Abandoned counts messages left to lapse because a handler of their
	// group overran MaxRunTime.
	Abandoned(n int)

	// NotChained counts each body refused because it is not a chained
	// event row, with the reason (NotChainedKey, ...), besides Poison.
	NotChained(reason string)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Received(int)                          {}
func (NopObserver) Claim(string, string)                  {}
func (NopObserver) Handled(string, string, time.Duration) {}
func (NopObserver) DeadLetter(string)                     {}
func (NopObserver) Poison()                               {}
func (NopObserver) Unmatched(string)                      {}
func (NopObserver) Deleted()                              {}
func (NopObserver) ForwardedToDLQ()                       {}
func (NopObserver) InfraRetry(string)                     {}
func (NopObserver) Extended(int)                          {}
func (NopObserver) Abandoned(int)                         {}
func (NopObserver) NotChained(string)                     {}

// Observers returns an Observer that tells each of obs in turn.
func Observers(obs ...Observer) Observer { return multiObserver(obs) }

type multiObserver []Observer

func (m multiObserver) each(f func(Observer)) {
	for _, o := range m {
		f(o)
	}
}

func (m multiObserver) Received(n int) { m.each(func(o Observer) { o.Received(n) }) }
func (m multiObserver) Claim(sub, outcome string) {
	m.each(func(o Observer) { o.Claim(sub, outcome) })
}
func (m multiObserver) Handled(sub, outcome string, d time.Duration) {
	m.each(func(o Observer) { o.Handled(sub, outcome, d) })
}
func (m multiObserver) DeadLetter(sub string)    { m.each(func(o Observer) { o.DeadLetter(sub) }) }
func (m multiObserver) Poison()                  { m.each(func(o Observer) { o.Poison() }) }
func (m multiObserver) Unmatched(typ string)     { m.each(func(o Observer) { o.Unmatched(typ) }) }
func (m multiObserver) Deleted()                 { m.each(func(o Observer) { o.Deleted() }) }
func (m multiObserver) ForwardedToDLQ()          { m.each(func(o Observer) { o.ForwardedToDLQ() }) }
func (m multiObserver) InfraRetry(op string)     { m.each(func(o Observer) { o.InfraRetry(op) }) }
func (m multiObserver) Extended(n int)           { m.each(func(o Observer) { o.Extended(n) }) }
func (m multiObserver) Abandoned(n int)          { m.each(func(o Observer) { o.Abandoned(n) }) }
func (m multiObserver) NotChained(reason string) { m.each(func(o Observer) { o.NotChained(reason) }) }

// Metrics is an Observer exporting Prometheus metrics.
type Metrics struct {
	received, deleted, poison, toDLQ prometheus.Counter
	extended, abandoned              prometheus.Counter
	claims                           *prometheus.CounterVec
	handled                          *prometheus.HistogramVec
	retries, deadLetters, unmatched  *prometheus.CounterVec
	notChained                       *prometheus.CounterVec
	infraRetries                     *prometheus.CounterVec
}

// Names of the worker's metrics that other parts read (the console's
// pipeline page).
const (
	MetricReceived       = "bowline_worker_received_total"
	MetricHandlerSeconds = "bowline_worker_handler_seconds"
	MetricRetries        = "bowline_worker_retries_total"
	MetricDeadLetters    = "bowline_worker_dead_letters_total"
)

// NewMetrics registers the worker's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		received:     prometheus.NewCounter(prometheus.CounterOpts{Name: MetricReceived, Help: "Messages received from the events queue."}),
		deleted:      prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_worker_deleted_total", Help: "Messages deleted after all their work was completed or dead."}),
		poison:       prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_worker_poison_pills_total", Help: "Message bodies that did not decode to an event."}),
		toDLQ:        prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_worker_forwarded_to_dlq_total", Help: "Messages with dead work forwarded to the dead-letter queue."}),
		claims:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_worker_claims_total", Help: "Inbox claims by outcome."}, []string{"subscription", "outcome"}),
		handled:      prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricHandlerSeconds, Help: "Handler latency by outcome.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"subscription", "outcome"}),
		retries:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRetries, Help: "Retryable handler failures left to SQS."}, []string{"subscription"}),
		deadLetters:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDeadLetters, Help: "Dead letters written."}, []string{"subscription"}),
		unmatched:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_worker_unmatched_total", Help: "Events that matched no DURABLE subscription."}, []string{"type"}),
		extended:     prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_worker_visibility_extended_total", Help: "Visibility extensions of held messages (handled, queued or being deleted)."}),
		abandoned:    prometheus.NewCounter(prometheus.CounterOpts{Name: "bowline_worker_abandoned_total", Help: "Messages left to lapse because a handler of their group overran its maximum run time."}),
		infraRetries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_worker_infra_retries_total", Help: "Retries after an infrastructure fault, with the message held."}, []string{"op"}),
		notChained:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bowline_worker_not_chained_total", Help: "Message bodies refused because they are not a chained event row (also counted as poison pills), by reason."}, []string{"reason"}),
	}
	reg.MustRegister(m.received, m.deleted, m.poison, m.toDLQ, m.claims, m.handled, m.retries, m.deadLetters, m.unmatched,
		m.extended, m.abandoned, m.infraRetries, m.notChained)
	return m
}

func (m *Metrics) Received(n int)            { m.received.Add(float64(n)) }
func (m *Metrics) Claim(sub, outcome string) { m.claims.WithLabelValues(sub, outcome).Inc() }
func (m *Metrics) DeadLetter(sub string)     { m.deadLetters.WithLabelValues(sub).Inc() }
func (m *Metrics) Poison()                   { m.poison.Inc() }
func (m *Metrics) Unmatched(typ string)      { m.unmatched.WithLabelValues(typ).Inc() }
func (m *Metrics) Deleted()                  { m.deleted.Inc() }
func (m *Metrics) ForwardedToDLQ()           { m.toDLQ.Inc() }
func (m *Metrics) InfraRetry(op string)      { m.infraRetries.WithLabelValues(op).Inc() }
func (m *Metrics) Extended(n int)            { m.extended.Add(float64(n)) }
func (m *Metrics) Abandoned(n int)           { m.abandoned.Add(float64(n)) }
func (m *Metrics) NotChained(reason string)  { m.notChained.WithLabelValues(reason).Inc() }
func (m *Metrics) Handled(sub, outcome string, d time.Duration) {
	m.handled.WithLabelValues(sub, outcome).Observe(d.Seconds())
	if outcome == HandledRetry {
		m.retries.WithLabelValues(sub).Inc()
	}
}

var _ Observer = (*Metrics)(nil)
