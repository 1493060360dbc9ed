package console

import (
	"context"
	"fmt"
	"html/template"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
)

// providerSubs are the subscriptions that call an external provider, by
// provider.
var providerSubs = map[string]string{
	catalog.SubShopifyMirror:       "shopify",
	catalog.SubBookShipment:        "shipping",
	catalog.SubNotifyBuyer:         "notify",
	catalog.SubNotifyOwner:         "notify",
	catalog.SubNotifyOwnerEmpty:    "notify",
	catalog.SubNotifyOwnerAppetite: "notify",
	catalog.SubNotifySupport:       "notify",
}

// Stage states, worst last.
const (
	stateOK      = "ok"
	stateIdle    = "idle"
	stateUnknown = "unknown"
	stateLagging = "lagging"
	stateDown    = "down"
)

// Thresholds at which a stage is lagging.
const (
	// lagOutboxAge: the oldest record waiting in a gateway. A gateway keeps
	// telemetry until the cloud acknowledges it (cloud/durable
	// DefaultAckEvery, 30 min), so older than that plus a few batches and
	// close to its 45 min resend timeout (edge/forward) is late.
	lagOutboxAge = 38 * time.Minute
	lagBacklog   = 5000             // records waiting in a gateway's outbox
	lagChainGap  = 50               // events committed here and not yet relayed
	lagRelay     = 10 * time.Second // relay behind the stream
	lagQueue     = 100              // messages waiting in events.fifo
	// lagReader: the newest rollup minute the console read is this far
	// behind: more than a gateway batch interval (1 min) plus the
	// consumer's rollup cadence (10 min) and the minute itself.
	lagReader = 15 * time.Minute
)

// queueDepth is one queue's attributes, or the problem reading them.
type queueDepth struct {
	Visible, InFlight int
	Problem           *problem
}

// sample is one reading of every source the pipeline page shows.
type sample struct {
	at     time.Time
	m      snapshot
	events queueDepth
	dlq    queueDepth
	rc     queueDepth
	calls  []ProviderCall
}

// sampler keeps the last samples, for rates and sparklines.
type sampler struct {
	mu      sync.RWMutex
	samples []sample // oldest first, at most keepSamples
}

const keepSamples = 60

func (s *sampler) push(x sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, x)
	if len(s.samples) > keepSamples {
		s.samples = s.samples[len(s.samples)-keepSamples:]
	}
}

func (s *sampler) copy() []sample {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]sample(nil), s.samples...)
}

// takeSample reads the registry, the queues and the provider calls.
func (c *Console) takeSample(ctx context.Context) sample {
	x := sample{at: time.Now(), m: gather(c.cfg.Gatherer)}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	x.events = c.depth(qctx, "SQS queue events.fifo", c.cfg.QueueURLs.Events)
	x.dlq = c.depth(qctx, "SQS dead-letter queue", c.cfg.QueueURLs.DLQ)
	if c.cfg.QueueURLs.RecordChanges != "" {
		x.rc = c.depth(qctx, "SQS queue record-changes", c.cfg.QueueURLs.RecordChanges)
	}
	if c.cfg.Calls != nil {
		x.calls, _ = c.cfg.Calls.ProviderCalls(qctx)
	}
	return x
}

func (c *Console) depth(ctx context.Context, service, url string) queueDepth {
	out, err := c.cfg.Queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if p := c.outages.note("sqs "+url, service, url, err, time.Now()); p != nil {
		return queueDepth{Problem: p}
	}
	v, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	f, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return queueDepth{Visible: v, InFlight: f}
}

// figure is one labelled number of a stage.
type figure struct {
	Label string
	Value string
	Bad   bool // shown as an error
}

// stage is one box of the pipeline diagram.
type stage struct {
	Key   string
	Name  string
	State string
	// Note says why the stage is lagging or down, or what it is.
	Note    string
	Figures []figure
	Spark   template.HTML
	Link    string
	// Problem is what failed, in words, with the raw error.
	Problem *problem
	// Deps are the keys of the stages this one needs: when one of them
	// cannot be reached, this one is down too and its figures unknown.
	Deps []string
}

// unknownFigures replaces s's figures with "?": what they would show is
// not known, and a stale zero would say all is well.
func (s *stage) unknownFigures() {
	for i := range s.Figures {
		s.Figures[i].Value, s.Figures[i].Bad = "?", true
	}
}

// cannotReach reports whether s, or a stage it depends on, cannot reach
// a service it needs.
func (s *stage) cannotReach() bool { return s.Problem != nil && s.Problem.Unreachable }

// propagate turns every stage whose dependency cannot reach its service
// down, so a dead queue turns the relay, the worker and the providers
// red. A stage's own dependencies come before it in data order, except
// the relay's queue: it is read as it is, and depends on nothing.
func propagate(ss []stage) {
	byKey := map[string]*stage{}
	for i := range ss {
		byKey[ss[i].Key] = &ss[i]
	}
	for i := range ss {
		s := &ss[i]
		for _, k := range s.Deps {
			d := byKey[k]
			if d == nil || !d.cannotReach() || s.cannotReach() {
				continue
			}
			s.State = stateDown
			s.Note = "needs " + d.Name + ": " + d.Problem.Words()
			s.Problem = d.Problem
			s.unknownFigures()
		}
	}
}

// series returns one number per sample (a rate when rate is true).
func rateSeries(ss []sample, f func(sample) float64, rate bool) []float64 {
	var out []float64
	for i := range ss {
		if !rate {
			out = append(out, f(ss[i]))
			continue
		}
		if i == 0 {
			continue
		}
		dt := ss[i].at.Sub(ss[i-1].at).Seconds()
		if dt <= 0 {
			continue
		}
		out = append(out, max(0, (f(ss[i])-f(ss[i-1]))/dt))
	}
	return out
}

// recentRate is the mean of the last rateWindow rates: counters move in
// bursts (a PutRecords call, a relay poll), so one interval is jumpy.
func recentRate(v []float64) float64 {
	n := min(rateWindow, len(v))
	if n == 0 {
		return 0
	}
	t := 0.0
	for _, x := range v[len(v)-n:] {
		t += x
	}
	return t / float64(n)
}

// rateWindow is how many readings a shown rate averages (10 s by default).
const rateWindow = 5

// delta is how much a counter grew over the kept samples.
func delta(ss []sample, f func(sample) float64) float64 {
	if len(ss) < 2 {
		return 0
	}
	return max(0, f(ss[len(ss)-1])-f(ss[0]))
}

func fmtRate(v float64) string {
	switch {
	case v == 0:
		return "0/s"
	case v < 10:
		return fmt.Sprintf("%.1f/s", v)
	default:
		return fmt.Sprintf("%s/s", fmtInt(int64(v+0.5)))
	}
}

func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// stages builds the diagram from the kept samples, the agents, the chain
// verifications and the telemetry reader: one box per stage, in data
// order, then the down state of a stage spread to those that need it.
func (c *Console) stages() []stage {
	r := c.readings()
	out := []stage{
		c.gatewaysStage(),
		ingestStage(r),
		c.kinesisStage(r),
		c.chainStage(r),
		relayStage(r),
		queueStage(r),
		workerStage(r),
		c.providersStage(r),
	}
	propagate(out)
	return out
}

// readings are what the stages are built from: the kept samples, oldest
// first, and the newest of them (zero before the first).
type readings struct {
	ss  []sample
	cur sample
}

// m is the newest gathering of the registry.
func (r readings) m() snapshot { return r.cur.m }

func (c *Console) readings() readings {
	r := readings{ss: c.sampler.copy()}
	if len(r.ss) > 0 {
		r.cur = r.ss[len(r.ss)-1]
	}
	return r
}

// notHere marks a stage whose part does not run in this process.
func (s *stage) notHere() { s.State, s.Note = stateUnknown, "not running in this process" }

// gatewaysStage: the edge agents' status endpoints.
func (c *Console) gatewaysStage() stage {
	gw := stage{Key: "gateways", Name: "Gateways", Link: Prefix + "bowls"}
	agents := c.agents.all()
	if len(agents) == 0 {
		gw.State, gw.Note = stateUnknown, "no agent status endpoint known to this process"
		return gw
	}
	up, backlog, oldest, rate, dropped := 0, int64(0), 0.0, 0.0, int64(0)
	for _, a := range agents {
		if a.Up() {
			up++
		}
		backlog += a.Backlog()
		oldest = max(oldest, a.Oldest())
		rate += a.PublishRate
		dropped += a.Status.Lanes.Events.Dropped + a.Status.Lanes.Telemetry.Dropped
	}
	// Under a simulated clock record ages are in simulated time, so
	// only the backlog tells whether a gateway falls behind.
	old := c.cfg.SimClock == nil && oldest > lagOutboxAge.Seconds()
	behind := old || backlog > lagBacklog*int64(len(agents))
	gw.State = stateOK
	switch {
	case up == 0:
		gw.State, gw.Note = stateDown, "no agent connected to the broker"
		if p := agents[0].Problem(); p != nil {
			gw.Note, gw.Problem = fmt.Sprintf("no agent answers: %s", p.Words()), p
		}
	case up < len(agents):
		gw.State, gw.Note = stateLagging, fmt.Sprintf("%d of %d agents not connected", len(agents)-up, len(agents))
	case old:
		gw.State, gw.Note = stateLagging, fmt.Sprintf("oldest record waiting %.0f s", oldest)
	case behind:
		gw.State, gw.Note = stateLagging, fmt.Sprintf("%s records waiting in outboxes", fmtInt(backlog))
	default:
		gw.Note = fmt.Sprintf("%d of %d agents connected", up, len(agents))
	}
	gw.Figures = []figure{{"publish", fmtRate(rate), false}, {"outbox backlog", fmtInt(backlog), behind}, {"dropped", fmtInt(dropped), dropped > 0}}
	return gw
}

// ingestStage: the broker and ingest.
func ingestStage(r readings) stage {
	in := stage{Key: "ingest", Name: "Broker / ingest", Deps: []string{"chain"}}
	m, ss := r.m(), r.ss
	if !m.has(ingest.MetricMessagesReceived) {
		in.notHere()
		return in
	}
	recv := rateSeries(ss, func(x sample) float64 { return x.m.sum(ingest.MetricMessagesReceived) }, true)
	rej := delta(ss, func(x sample) float64 { return x.m.sum(ingest.MetricMessagesRejected) })
	in.State, in.Note = stateOK, "bowl events: events rule -> Kinesis events -> the chain"
	if rej > 0 {
		in.State, in.Note = stateLagging, fmt.Sprintf("%.0f messages rejected lately (dead-lettered)", rej)
	}
	in.Figures = []figure{{"messages", fmtRate(recentRate(recv)), false},
		{"rejected", fmtInt(int64(m.sum(ingest.MetricMessagesRejected))), rej > 0},
		{"gaps", fmtInt(int64(m.sum(ingest.MetricDataGaps))), false}}
	in.Spark = sparkline(recv)
	return in
}

// kinesisStage: new samples the telemetry consumer took from the stream
// (the topic rules put them there), records the rules could not put, and
// how far behind the rollups this console reads are.
func (c *Console) kinesisStage(r readings) stage {
	kin := stage{Key: "kinesis", Name: "Kinesis telemetry"}
	records, readAt, newest := c.telemetry.status()
	samples := rateSeries(r.ss, func(x sample) float64 { return x.m.sum(durable.MetricSamples) }, true)
	putErr := r.m().sum(rules.MetricErrors)
	// The rollups are stamped on the bowls' clock: how far the newest is
	// behind is measured on it (the demo clock is hours behind the wall
	// clock).
	behind := time.Duration(0)
	if !newest.IsZero() {
		behind = max(0, c.now().Sub(newest))
	}
	kin.State, kin.Note = stateOK, fmt.Sprintf("console reader: %s rollup minutes", fmtInt(records))
	switch {
	case readAt.IsZero():
		kin.State, kin.Note = stateUnknown, "console reader has not read yet"
	case c.outages.get(sourceRollups) != nil:
		p := c.outages.get(sourceRollups)
		kin.State, kin.Note, kin.Problem = stateDown, "console reader: "+p.Words(), p
	case time.Since(readAt) > 3*lagReader:
		kin.State, kin.Note = stateDown, "console reader gets no answer"
	case behind > lagReader:
		kin.State, kin.Note = stateLagging, fmt.Sprintf("newest rollup %s behind (%s)", fmtDuration(behind), c.bowlClockName())
	}
	kin.Figures = []figure{{"samples in", fmtRate(recentRate(samples)), false}, {"reader behind", fmtDuration(behind), behind > lagReader}, {"put errors", fmtInt(int64(putErr)), putErr > 0}}
	kin.Spark = sparkline(samples)
	return kin
}

// chainStage: events committed, and the last verification.
func (c *Console) chainStage(r readings) stage {
	ch := stage{Key: "chain", Name: "Event chain", Link: Prefix + "tenants"}
	committed := rateSeries(r.ss, func(x sample) float64 { return x.m.sum(engine.MetricEventsCommitted) }, true)
	emitFail := r.m().sum(engine.MetricEmitFailures)
	intact, checked, broken := 0, 0, ""
	for _, v := range c.log.views() {
		if v.Checked() {
			checked++
			if v.Chain.Intact {
				intact++
			} else if broken == "" {
				broken = fmt.Sprintf("%s broken at seq %d", v.Tenant, v.Chain.FirstBadSeq)
			}
		}
	}
	ch.State, ch.Note = stateOK, fmt.Sprintf("%d/%d chains intact", intact, checked)
	dbp := c.outages.get(sourceEvents)
	switch {
	case dbp != nil:
		ch.State, ch.Note, ch.Problem = stateDown, dbp.Words(), dbp
	case broken != "":
		ch.State, ch.Note = stateDown, broken
	case checked == 0:
		ch.State = stateIdle
	}
	ch.Figures = []figure{{"events", fmtRate(recentRate(committed)), false}, {"chains intact", fmt.Sprintf("%d/%d", intact, checked), intact < checked}, {"emit failures", fmtInt(int64(emitFail)), emitFail > 0}}
	ch.Spark = sparkline(committed)
	if dbp != nil {
		ch.unknownFigures()
	}
	return ch
}

// relayStage: DynamoDB Streams -> SQS.
func relayStage(r readings) stage {
	rl := stage{Key: "relay", Name: "Relay", Deps: []string{"chain", "queue"}}
	m, ss := r.m(), r.ss
	if !m.has(relay.MetricForwarded) {
		rl.notHere()
		rl.Note = "not in this process (an EventBridge Pipe in AWS)"
		return rl
	}
	fwd := rateSeries(ss, func(x sample) float64 { return x.m.sum(relay.MetricForwarded) }, true)
	// The lag gauge is the age of the newest record forwarded: it
	// grows while nothing happens, so it only counts while the relay
	// is forwarding.
	lag := m.max(relay.MetricLag)
	behind := relayBehind(ss)
	unrelayed := 0.0
	if m.has(engine.MetricEventsCommitted) {
		unrelayed = m.sum(engine.MetricEventsCommitted) - m.sum(relay.MetricForwarded, "pipe=events")
	}
	sendErr := delta(ss, func(x sample) float64 { return x.m.sum(relay.MetricSendErrors) })
	rl.State, rl.Note = stateOK, "streams -> events.fifo, record-changes"
	switch {
	case behind:
		rl.State, rl.Note = stateLagging, fmt.Sprintf("%.0f s behind the stream", lag)
	case unrelayed > lagChainGap:
		rl.State, rl.Note = stateLagging, fmt.Sprintf("%.0f events committed here not relayed yet", unrelayed)
	}
	if sendErr > 0 {
		rl.State, rl.Note = stateLagging, fmt.Sprintf("%.0f failed sends lately (retried)", sendErr)
	}
	rl.Figures = []figure{{"forwarded", fmtRate(recentRate(fwd)), false}, {"last record age", fmt.Sprintf("%.1f s", lag), behind}, {"send errors", fmtInt(int64(m.sum(relay.MetricSendErrors))), sendErr > 0}}
	rl.Spark = sparkline(fwd)
	return rl
}

// queueStage: the events queue and its dead-letter queue.
func queueStage(r readings) stage {
	q := stage{Key: "queue", Name: "Queue / DLQ", Link: Prefix + "dead-letters"}
	ss, cur := r.ss, r.cur
	waiting := rateSeries(ss, func(x sample) float64 { return float64(x.events.Visible) }, false)
	q.State, q.Note = stateOK, "events.fifo"
	switch {
	case len(ss) == 0:
		q.State, q.Note = stateUnknown, "not read yet"
	case cur.events.Problem != nil:
		q.State, q.Note, q.Problem = stateDown, cur.events.Problem.Words(), cur.events.Problem
	case cur.dlq.Problem != nil:
		q.State, q.Note, q.Problem = stateDown, cur.dlq.Problem.Words(), cur.dlq.Problem
	case cur.dlq.Visible+cur.dlq.InFlight > 0:
		q.State, q.Note = stateLagging, fmt.Sprintf("%d events in the DLQ need an operator", cur.dlq.Visible+cur.dlq.InFlight)
	case cur.events.Visible > lagQueue:
		q.State, q.Note = stateLagging, fmt.Sprintf("%d messages waiting", cur.events.Visible)
	}
	q.Figures = []figure{{"waiting", fmtInt(int64(cur.events.Visible)), cur.events.Visible > lagQueue},
		{"in flight", fmtInt(int64(cur.events.InFlight)), false},
		{"DLQ", fmtInt(int64(cur.dlq.Visible + cur.dlq.InFlight)), cur.dlq.Visible+cur.dlq.InFlight > 0},
		{"record-changes", fmtInt(int64(cur.rc.Visible)), cur.rc.Problem != nil}}
	switch {
	case len(ss) == 0 || cur.events.Problem != nil:
		q.unknownFigures()
	case cur.dlq.Problem != nil:
		q.Figures[2].Value, q.Figures[2].Bad = "?", true
	}
	if cur.rc.Problem != nil {
		q.Figures[3].Value = "?"
	}
	q.Spark = sparkline(waiting)
	return q
}

// workerStage: the inbox worker.
func workerStage(r readings) stage {
	wk := stage{Key: "worker", Name: "Worker", Deps: []string{"queue"}}
	m, ss := r.m(), r.ss
	if !m.has(worker.MetricReceived) {
		wk.notHere()
		return wk
	}
	ok := rateSeries(ss, func(x sample) float64 { return x.m.sum(worker.MetricHandlerSeconds, "outcome=ok") }, true)
	retries := delta(ss, func(x sample) float64 { return x.m.sum(worker.MetricRetries) })
	dead := delta(ss, func(x sample) float64 { return x.m.sum(worker.MetricDeadLetters) })
	wk.State, wk.Note = stateOK, "inbox claim -> handler -> complete"
	switch {
	case dead > 0:
		wk.State, wk.Note = stateLagging, fmt.Sprintf("%.0f dead letters lately", dead)
	case retries > 0:
		wk.State, wk.Note = stateLagging, fmt.Sprintf("%.0f retries lately", retries)
	}
	wk.Figures = []figure{{"handled", fmtRate(recentRate(ok)), false}, {"in flight", fmtInt(int64(r.cur.events.InFlight)), false},
		{"retries", fmtInt(int64(m.sum(worker.MetricRetries))), retries > 0},
		{"dead", fmtInt(int64(m.sum(worker.MetricDeadLetters))), m.sum(worker.MetricDeadLetters) > 0}}
	wk.Spark = sparkline(ok)
	return wk
}

// providersStage: outcomes of the subscriptions that call a provider, and
// the calls the providers report.
func (c *Console) providersStage(r readings) stage {
	pv := stage{Key: "providers", Name: "Providers", Link: Prefix + "commerce", Deps: []string{"worker"}}
	if !r.m().has(worker.MetricReceived) && c.cfg.Calls == nil {
		pv.notHere()
		return pv
	}
	ss := r.ss
	okRate := rateSeries(ss, func(x sample) float64 { return providerOutcomes(x, "ok") }, true)
	failed := delta(ss, func(x sample) float64 { return providerOutcomes(x, "retry") + providerOutcomes(x, "dead") })
	succeeded := delta(ss, func(x sample) float64 { return providerOutcomes(x, "ok") })
	calls, failedCalls := len(r.cur.calls), 0
	for _, cl := range r.cur.calls {
		if !cl.OK() {
			failedCalls++
		}
	}
	pv.State, pv.Note = stateOK, "Shopify, shipping, notifications"
	switch {
	case failed > 0 && succeeded == 0:
		pv.State, pv.Note = stateDown, fmt.Sprintf("every call failing lately (%.0f)", failed)
	case failed > 0:
		pv.State, pv.Note = stateLagging, fmt.Sprintf("%.0f calls failed lately", failed)
	}
	pv.Figures = []figure{{"calls ok", fmtRate(recentRate(okRate)), false}, {"failed lately", fmtInt(int64(failed)), failed > 0}}
	if c.cfg.Calls != nil {
		pv.Figures = append(pv.Figures, figure{"calls seen", fmt.Sprintf("%d (%d failed)", calls, failedCalls), false})
	}
	pv.Spark = sparkline(okRate)
	return pv
}

// providerOutcomes counts the handler runs of the subscriptions that call
// a provider ending in outcome.
func providerOutcomes(x sample, outcome string) float64 {
	t := 0.0
	for sub := range providerSubs {
		t += x.m.sum(worker.MetricHandlerSeconds, "subscription="+sub, "outcome="+outcome)
	}
	return t
}

// relayBehind reports whether the relay has been forwarding records older
// than lagRelay over each of the last rateWindow readings. One old batch
// (the records committed before the relay started, which it forwards
// first) is a catch-up, not a relay that falls behind.
func relayBehind(ss []sample) bool {
	if len(ss) < rateWindow+1 {
		return false
	}
	for i := len(ss) - rateWindow; i < len(ss); i++ {
		moved := ss[i].m.sum(relay.MetricForwarded) > ss[i-1].m.sum(relay.MetricForwarded)
		if !moved || ss[i].m.max(relay.MetricLag) <= lagRelay.Seconds() {
			return false
		}
	}
	return true
}
