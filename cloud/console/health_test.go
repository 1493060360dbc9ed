package console

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
)

// refusingQueue answers as an SQS endpoint nobody listens on does.
type refusingQueue struct{}

func (refusingQueue) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return nil, errors.New(`operation error SQS: GetQueueAttributes, https response error StatusCode: 0, RequestID: , request send failed, Post "http://127.0.0.1:9/": dial tcp 127.0.0.1:9: connect: connection refused`)
}

func TestAnUnreachableQueueTurnsItsDependantsRed(t *testing.T) {
	cfg := testConfig(&countingRedriver{})
	cfg.Queue, cfg.QueueURLs = refusingQueue{}, QueueURLs{Events: "http://127.0.0.1:9/000000000000/events.fifo", DLQ: "http://127.0.0.1:9/000000000000/dlq.fifo"}
	reg := prometheus.NewRegistry()
	worker.NewMetrics(reg)
	relay.NewMetrics(reg).For("events").Forwarded(0)
	cfg.Gatherer = reg
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Refresh(t.Context())
	got := map[string]stage{}
	for _, s := range c.stages() {
		got[s.Key] = s
	}
	for _, k := range []string{"queue", "relay", "worker", "providers"} {
		s := got[k]
		if s.State != stateDown {
			t.Errorf("%s is %s (%s); want down while SQS is unreachable", k, s.State, s.Note)
		}
		for _, f := range s.Figures {
			if f.Value != "?" {
				t.Errorf("%s shows %s = %q; want ? (not a stale figure)", k, f.Label, f.Value)
			}
		}
	}
	q := got["queue"]
	if !strings.Contains(q.Note, "127.0.0.1:9") || !strings.Contains(q.Note, "unreachable") || !strings.Contains(q.Note, "since") || q.Problem == nil || !strings.Contains(q.Problem.Raw, "dial tcp") {
		t.Errorf("queue's note %q (raw %v); want the service, its address, since when, and the raw error kept", q.Note, q.Problem)
	}
	if h := healthOf(c.stages()); h.State != stateDown || !strings.Contains(h.Text, "Queue / DLQ") {
		t.Errorf("banner %+v; want down, naming the queue", h)
	}
}

func TestRelayCatchingUpAtStartIsNotBehind(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := relay.NewMetrics(reg).For("events")
	var ss []sample
	take := func() { ss = append(ss, sample{m: gather(reg)}) }
	take()
	// At start the relay forwards what was committed before it ran:
	// one batch, 45 s old.
	m.Forwarded(20)
	m.Lag(45e9)
	take()
	for range rateWindow {
		take()
	}
	if relayBehind(ss) {
		t.Errorf("one old batch at start counts as the relay falling behind")
	}
	for range rateWindow {
		m.Forwarded(5)
		take()
	}
	if !relayBehind(ss) {
		t.Errorf("forwarding 45 s old records over %d readings does not count as behind", rateWindow)
	}
}

func TestTelemetryBehindIsMeasuredOnTheBowlsClock(t *testing.T) {
	cfg := testConfig(&countingRedriver{})
	sim := time.Now().UTC().Add(-17 * time.Hour).Truncate(time.Minute) // the demo clock runs hours behind the wall clock
	cfg.SimClock = func() time.Time { return sim }
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.telemetry.addPoints("gw-0:bowl-0", "t", []durable.Point{{At: sim.Add(-2 * time.Minute), Kind: weightKind, Count: 60, Mean: 200, Min: 199, Max: 201, Last: 200}}, time.Now())
	for _, s := range c.stages() {
		if s.Key == "kinesis" && s.State != stateOK {
			t.Errorf("telemetry 2 min behind the bowls' clock (17 h behind the wall clock): kinesis is %s (%s); want ok", s.State, s.Note)
		}
	}
}

func TestMoneyInItsCurrency(t *testing.T) {
	for _, tc := range []struct {
		cents    int64
		currency string
		want     string
	}{
		{4999, "USD", "49.99 USD"},
		{1200, "jpy", "1,200 JPY"},
		{4999, "", "4,999 minor units (no currency)"},
	} {
		if got := money(tc.cents, tc.currency); got != tc.want {
			t.Errorf("money(%d, %q) = %q; want %q", tc.cents, tc.currency, got, tc.want)
		}
	}
}

func TestErrorsInWords(t *testing.T) {
	p := explain("SQS queue events.fifo", "http://127.0.0.1:4566/000000000000/events.fifo", errors.New("operation error SQS: GetQueueAttributes, exceeded maximum number of attempts, 3, https response error StatusCode: 0, RequestID: , request send failed, Post \"http://127.0.0.1:4566/\": context deadline exceeded"))
	if w := p.Words(); w != "SQS queue events.fifo at 127.0.0.1:4566 is not answering (timed out)" || !p.Unreachable {
		t.Errorf("a timed-out queue in words: %q (unreachable %v)", w, p.Unreachable)
	}
	p = explain("DynamoDB table events", "", errors.New("operation error DynamoDB: Query, https response error StatusCode: 400, RequestID: x, ResourceNotFoundException: Cannot do operations on a non-existent table"))
	if w := p.Words(); !strings.Contains(w, "no such queue, table or stream") || p.Unreachable {
		t.Errorf("a missing table in words: %q (unreachable %v); want it said, and not unreachable", w, p.Unreachable)
	}
}
