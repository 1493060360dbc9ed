package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
)

// maxStatusBytes bounds a gateway's /status document.
const maxStatusBytes = 4 << 20

// gatewayStatus reads gateway g's /status.
func (r *run) gatewayStatus(ctx context.Context, g int) (wire.GatewayStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, _, err := wire.FetchStatus(ctx, http.DefaultClient, r.status[g], maxStatusBytes)
	if err != nil {
		return st, fmt.Errorf("status of gateway %d: %w", g, err)
	}
	return st, nil
}

// counter adds up a gateway counter that starts again from 0 when the
// agent restarts (its uptime went back).
type counter struct {
	last, total int64
	uptime      time.Duration
}

func (c *counter) observe(uptime time.Duration, v int64) {
	if uptime < c.uptime || v < c.last {
		c.last = 0
	}
	c.total += v - c.last
	c.last, c.uptime = v, uptime
}

// pollGateways reads every gateway's /status each second until ctx ends,
// adding up the samples they published in batches (resends included) and
// the cloud acks they applied, over restarts. What an agent counted since
// the last poll before a kill is not seen, so both are lower bounds.
func (r *run) pollGateways(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		for g := range r.cfg.Gateways {
			if st, err := r.gatewayStatus(ctx, g); err == nil {
				r.mu.Lock()
				r.batchSamples[g].observe(st.Uptime, st.MQTT.Telemetry.BatchSamples)
				r.acksApplied[g].observe(st.Uptime, st.Acks.AcksApplied)
				r.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// unacked sums the telemetry records the gateways' outboxes still hold
// (not acknowledged by the consumer), per gateway in detail.
func (r *run) unacked(ctx context.Context) (int64, []string, error) {
	var n int64
	var detail []string
	for g := range r.cfg.Gateways {
		st, err := r.gatewayStatus(ctx, g)
		if err != nil {
			return 0, nil, err
		}
		left := max(st.Acks.UnackedSamples, st.Lanes.Telemetry.Backlog)
		n += left
		if left > 0 {
			detail = append(detail, fmt.Sprintf("%s: %d telemetry records not acknowledged", gatewayOf(g), left))
		}
	}
	return n, detail, nil
}

// acksPublished counts the acknowledgements the IoT data endpoint
// published, over every life of the process (its "iot publish" lines on
// an ack topic).
func (r *run) acksPublished() int {
	b, err := os.ReadFile(r.procs[procEndpoint].log)
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(line, []byte(`msg="iot publish"`)) && bytes.Contains(line, []byte("/ack ")) {
			n++
		}
	}
	return n
}

// falseGaps lists the bowl.data_gap events the consumer raised for a range
// of which the stream holds a sample: a hole that was not one.
func (r *run) falseGaps(ctx context.Context, t *telemetry) (raised int, wrong []string, err error) {
	for g := range r.cfg.Gateways {
		chain, err := r.readChain(ctx, tenantOf(g))
		if err != nil {
			return 0, nil, err
		}
		for _, ev := range chain {
			if ev.Type != catalog.TypeDataGap {
				continue
			}
			gap, err := catalog.Decode[catalog.DataGap](ev)
			if err != nil || gap.Lane != "telemetry" {
				continue
			}
			raised++
			if t.has(gap.Thing, gap.Outbox, gap.FromSeq, gap.ToSeq) {
				wrong = append(wrong, fmt.Sprintf("%s outbox %s seqs %d-%d", gap.Thing, gap.Outbox, gap.FromSeq, gap.ToSeq))
			}
		}
	}
	sort.Strings(wrong)
	return raised, wrong, nil
}

// checkTelemetryPath evaluates the invariants of the telemetry path
// beyond the frames: the stream's seqs without holes, every outbox
// acknowledged, no false bowl.data_gap, and nothing in the rule errors or
// the consumer's on-failure queue.
func (r *run) checkTelemetryPath(ctx context.Context, t *telemetry, res *ModeResult) error {
	holes, hd := t.holes()
	res.StreamHoles = holes
	res.check("stream seqs without holes per (thing, outbox)", holes == 0, joinFirst(hd, 5))
	res.check("every Kinesis record decodes (durable.DecodeRecord)", t.undecodable == 0, fmt.Sprintf("%d undecodable", t.undecodable))

	left, ud, err := r.unacked(ctx)
	if err != nil {
		return err
	}
	res.Unacked = int(left)
	res.check("gateway outboxes fully acknowledged", left == 0, joinFirst(ud, 5))
	res.AcksPublished = r.acksPublished()
	r.mu.Lock()
	for g := range r.cfg.Gateways {
		res.BatchSamples += int(r.batchSamples[g].total)
		res.AcksApplied += int(r.acksApplied[g].total)
	}
	r.mu.Unlock()
	res.Resent = max(0, res.BatchSamples-t.samples)

	raised, wrong, err := r.falseGaps(ctx, t)
	if err != nil {
		return err
	}
	res.DataGaps, res.FalseDataGaps = raised, len(wrong)
	res.check("no bowl.data_gap for a range in the stream", len(wrong) == 0, joinFirst(wrong, 5))

	if res.RuleErrors, err = r.queueDepth(ctx, r.sc.Names.RuleErrorsQueue()); err != nil {
		return err
	}
	if res.ConsumerDLQ, err = r.queueDepth(ctx, r.sc.Names.TelemetryConsumerDLQ()); err != nil {
		return err
	}
	res.check("rule-errors and telemetry-consumer-dlq empty", res.RuleErrors == 0 && res.ConsumerDLQ == 0,
		fmt.Sprintf("%d in rule-errors, %d in telemetry-consumer-dlq", res.RuleErrors, res.ConsumerDLQ))
	return nil
}

func joinFirst(s []string, n int) string {
	if len(s) > n {
		s = append(s[:n:n], "...")
	}
	return fmt.Sprint(s)
}
