package rules

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Observer is told what the stand-in does with every message. Calls come
// from many goroutines and must not block. Metrics implements it; embed
// NopObserver to observe only some calls.
type Observer interface {
	// Evaluated: rule (a base name) ran on a message of bytes payload bytes.
	Evaluated(rule string, bytes int)
	// Acted: rule's Kinesis action put a record of bytes bytes.
	Acted(rule string, bytes int)
	// Failed: a message of rule failed at stage: StageEvaluate (the SELECT
	// could not be computed; logged and acknowledged), StageAction (the
	// record went to the error queue) or StageErrorAction (the error queue
	// refused it too; the message stays unacknowledged).
	Failed(rule, stage string)
	// InFlight: the number of messages in flight (taken from the broker
	// and not yet settled, Runner.InFlight) changed by delta, +1 or -1.
	InFlight(delta int)
}

// NopObserver observes nothing; embed it to observe only some calls.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Evaluated(string, int) {}
func (NopObserver) Acted(string, int)     {}
func (NopObserver) Failed(string, string) {}
func (NopObserver) InFlight(int)          {}

// The stages of Observer.Failed.
const (
	StageEvaluate    = "evaluate"
	StageAction      = "action"
	StageErrorAction = "error_action"
)

// Counts are what the stand-in did, per rule, for the cost bench: AWS IoT
// bills rules triggered and actions executed in 5 KB units (MeterBytes).
type Counts struct {
	// Evaluations are rule evaluations (messages the rule ran on), and
	// EvaluationUnits their 5 KB units.
	Evaluations, EvaluationUnits int64
	// Actions are records put into Kinesis, and ActionUnits their 5 KB
	// units.
	Actions, ActionUnits int64
	// Errors are messages whose action failed and went to the error queue.
	Errors int64
	// EvaluationErrors and ErrorActionFailures count the other failures
	// (Observer.Failed's stages).
	EvaluationErrors, ErrorActionFailures int64
}

// counter keeps Counts per rule; it is the Runner's own observer.
type counter struct {
	NopObserver
	mu     sync.Mutex
	byRule map[string]*Counts
}

func (c *counter) get(rule string) *Counts {
	if c.byRule == nil {
		c.byRule = map[string]*Counts{}
	}
	n, ok := c.byRule[rule]
	if !ok {
		n = &Counts{}
		c.byRule[rule] = n
	}
	return n
}

func (c *counter) Evaluated(rule string, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.get(rule)
	n.Evaluations++
	n.EvaluationUnits += Units(bytes)
}

func (c *counter) Acted(rule string, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.get(rule)
	n.Actions++
	n.ActionUnits += Units(bytes)
}

func (c *counter) Failed(rule, stage string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.get(rule)
	switch stage {
	case StageEvaluate:
		n.EvaluationErrors++
	case StageAction:
		n.Errors++
	default:
		n.ErrorActionFailures++
	}
}

func (c *counter) snapshot() map[string]Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Counts, len(c.byRule))
	for k, v := range c.byRule {
		out[k] = *v
	}
	return out
}

// Metrics is the stand-in's Prometheus metrics, bowline_rules_*, labelled
// by rule base name.
type Metrics struct {
	evaluations, evaluationUnits *prometheus.CounterVec
	actions, actionUnits         *prometheus.CounterVec
	errors                       *prometheus.CounterVec
	inFlight                     prometheus.Gauge
}

var _ Observer = (*Metrics)(nil)

// MetricErrors names the stand-in's count of failed messages, which other
// parts read (the console's pipeline page).
const MetricErrors = "bowline_rules_errors_total"

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	const ns, sub = "bowline", "rules"
	m := &Metrics{
		evaluations:     prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "evaluations_total", Help: "Rule evaluations (messages a rule ran on), by rule."}, []string{"rule"}),
		evaluationUnits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "evaluation_units_total", Help: "Rule evaluations in AWS IoT's 5 KB metering units, by rule."}, []string{"rule"}),
		actions:         prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "actions_total", Help: "Kinesis records the rules put, by rule."}, []string{"rule"}),
		actionUnits:     prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "action_units_total", Help: "Kinesis actions in AWS IoT's 5 KB metering units, by rule."}, []string{"rule"}),
		errors:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricErrors, Help: "Messages that failed, by rule and stage (evaluate, action: sent to rule-errors, error_action: rule-errors refused it, left unacknowledged)."}, []string{"rule", "stage"}),
		inFlight:        prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "in_flight_messages", Help: "Messages taken from the broker and not yet settled (at most the stand-in's --max-in-flight)."}),
	}
	reg.MustRegister(m.evaluations, m.evaluationUnits, m.actions, m.actionUnits, m.errors, m.inFlight)
	return m
}

func (m *Metrics) Evaluated(rule string, bytes int) {
	m.evaluations.WithLabelValues(rule).Inc()
	m.evaluationUnits.WithLabelValues(rule).Add(float64(Units(bytes)))
}

func (m *Metrics) Acted(rule string, bytes int) {
	m.actions.WithLabelValues(rule).Inc()
	m.actionUnits.WithLabelValues(rule).Add(float64(Units(bytes)))
}

func (m *Metrics) Failed(rule, stage string) { m.errors.WithLabelValues(rule, stage).Inc() }

func (m *Metrics) InFlight(delta int) { m.inFlight.Add(float64(delta)) }
