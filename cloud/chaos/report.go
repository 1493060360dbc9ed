package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Report is a whole chaos run: the schedule and one result per inbox mode.
type Report struct {
	Seed     uint64        `json:"seed"`
	Config   Config        `json:"config"`
	Schedule []Fault       `json:"schedule"`
	Modes    []*ModeResult `json:"modes"`
}

// Invariant is one checked property.
type Invariant struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// ModeResult is what one inbox mode's run measured.
type ModeResult struct {
	Inbox   string `json:"inbox"`
	Settled bool   `json:"settled"`
	Elapsed string `json:"elapsed"`

	Samples          int `json:"samples"`
	AckedFrames      int `json:"acked_frames"`
	LostFrames       int `json:"lost_frames"`
	DuplicateRecords int `json:"duplicate_kinesis_records"`
	// DuplicateSamples are samples the stream holds more than once by
	// (thing, outbox, seq): batches sent again after the ack timeout, or
	// redelivered to the rule stand-in.
	DuplicateSamples int `json:"duplicate_samples"`
	// StreamHoles are seqs under a (thing, outbox)'s highest in the stream
	// that the stream lacks; Unacked the telemetry records the gateways'
	// outboxes still held at the end.
	StreamHoles int `json:"stream_holes"`
	Unacked     int `json:"unacked_at_end"`
	// AcksPublished are the consumer's acks the IoT data endpoint
	// published; DataGaps the bowl.data_gap events the consumer raised,
	// FalseDataGaps those for a range the stream holds.
	AcksPublished int `json:"acks_published"`
	// BatchSamples are the samples the gateways published in batches,
	// resends included, and AcksApplied the cloud acks they applied, as
	// their /status counted them over restarts (lower bounds: an agent's
	// last second before a kill is not seen); Resent is BatchSamples less
	// the distinct samples in the stream.
	BatchSamples  int `json:"gateway_batch_samples"`
	AcksApplied   int `json:"gateway_acks_applied"`
	Resent        int `json:"gateway_resent_samples"`
	DataGaps      int `json:"data_gaps"`
	FalseDataGaps int `json:"false_data_gaps"`
	// RuleErrors and ConsumerDLQ are the messages in rule-errors and
	// telemetry-consumer-dlq at the end.
	RuleErrors  int `json:"rule_errors"`
	ConsumerDLQ int `json:"consumer_dlq"`

	ChainEvents         int `json:"chain_events"`
	BowlEvents          int `json:"bowl_events"`
	DuplicateBowlEvents int `json:"duplicate_bowl_events"`
	// DeviceFaults is the fault frames in the simulators' truth;
	// DeviceFaultMismatch how far the chain's device_fault events are off.
	DeviceFaults        int `json:"device_faults"`
	DeviceFaultMismatch int `json:"device_fault_mismatch"`
	// DeviceFaultsRefused are truth faults not in a chain, each one a
	// reading the MCU refused with its ring full (bounded by Refused, the
	// readings the MCUs refused: backpressure, not loss).
	DeviceFaultsRefused int `json:"device_faults_refused"`
	Refused             int `json:"mcu_refused_readings"`

	PaidOrders         int `json:"paid_orders"`
	PaymentMismatch    int `json:"payment_mismatch"`
	BadWebhooksRefused int `json:"bad_webhooks_refused"`
	Effects            int `json:"effects"`
	LostEffects        int `json:"lost_effects"`
	// ExtraCalls are provider calls repeating an Idempotency-Key that had
	// already been called: absorbed by the provider, not new effects.
	ExtraCalls int `json:"extra_calls_same_key"`
	Reordered  int `json:"reordered"`

	MaxOrderLatency  time.Duration `json:"-"`
	MaxOrderLatencyS float64       `json:"max_order_latency_s"`

	DLQ         int `json:"dlq"`
	DeadLetters int `json:"dead_letters"`

	// Seed counts the article's flaws from the inbox rows left at the end.
	Seed struct {
		// PendingRows: runs lost to a crash between claim and complete.
		PendingRows int `json:"pending_rows"`
		// DeadRows: work killed by one error (every error of a run is
		// retryable: 5xx, hangs, throttling).
		DeadRows int `json:"dead_rows"`
		// DLQMoved by the article's redrive; Replayed (event,
		// subscription) pairs sent back; RedriveNoEffect of them still
		// unfinished after the queue drained.
		DLQMoved        int `json:"dlq_moved"`
		Replayed        int `json:"replayed"`
		RedriveNoEffect int `json:"redrive_no_effect"`
	} `json:"seed_flaws"`

	Kills int `json:"kills"`
	// PowerCuts on a FUSE power-cut disk (internal/powercut); 0 when FUSE
	// is unavailable and power_cut faults were SIGKILLs.
	PowerCuts     int            `json:"power_cuts"`
	FaultsApplied map[string]int `json:"faults_applied"`
	Invariants    []Invariant    `json:"invariants"`
}

func (m *ModeResult) check(name string, ok bool, detail string) {
	if ok {
		detail = ""
	}
	m.Invariants = append(m.Invariants, Invariant{Name: name, OK: ok, Detail: detail})
}

// OK reports whether every invariant of the Bowline mode held (the seed
// mode is a baseline expected to fail).
func (r *Report) OK() bool {
	for _, m := range r.Modes {
		if m.Inbox != InboxBowline {
			continue
		}
		for _, inv := range m.Invariants {
			if !inv.OK {
				return false
			}
		}
	}
	return true
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the side-by-side table and every failed invariant.
func (r *Report) WriteTable(w io.Writer) {
	head := []string{"measure"}
	for _, m := range r.Modes {
		head = append(head, "--inbox "+m.Inbox)
	}
	rows := [][]string{head}
	add := func(name string, f func(m *ModeResult) string) {
		row := []string{name}
		for _, m := range r.Modes {
			row = append(row, f(m))
		}
		rows = append(rows, row)
	}
	num := func(f func(m *ModeResult) int) func(m *ModeResult) string {
		return func(m *ModeResult) string { return fmt.Sprint(f(m)) }
	}
	add("settled", func(m *ModeResult) string { return fmt.Sprint(m.Settled) })
	add("elapsed", func(m *ModeResult) string { return m.Elapsed })
	add("samples in Kinesis", num(func(m *ModeResult) int { return m.Samples }))
	add("acked frames lost", num(func(m *ModeResult) int { return m.LostFrames }))
	add("duplicate Kinesis records / samples (allowed)", func(m *ModeResult) string {
		return fmt.Sprintf("%d / %d", m.DuplicateRecords, m.DuplicateSamples)
	})
	add("stream holes / unacked in outboxes at end", func(m *ModeResult) string { return fmt.Sprintf("%d / %d", m.StreamHoles, m.Unacked) })
	add("acks published / applied by gateways", func(m *ModeResult) string { return fmt.Sprintf("%d / %d", m.AcksPublished, m.AcksApplied) })
	add("samples sent by gateways / sent again (at least)", func(m *ModeResult) string { return fmt.Sprintf("%d / %d", m.BatchSamples, m.Resent) })
	add("bowl.data_gap raised / for a range in the stream", func(m *ModeResult) string { return fmt.Sprintf("%d / %d", m.DataGaps, m.FalseDataGaps) })
	add("rule-errors / telemetry-consumer-dlq", func(m *ModeResult) string { return fmt.Sprintf("%d / %d", m.RuleErrors, m.ConsumerDLQ) })
	add("bowl events in chains", num(func(m *ModeResult) int { return m.BowlEvents }))
	add("duplicate bowl events", num(func(m *ModeResult) int { return m.DuplicateBowlEvents }))
	add("device faults raised / refused by MCU / wrong", func(m *ModeResult) string {
		return fmt.Sprintf("%d / %d / %d", m.DeviceFaults, m.DeviceFaultsRefused, m.DeviceFaultMismatch)
	})
	add("readings refused by MCUs (ring full)", num(func(m *ModeResult) int { return m.Refused }))
	add("paid orders", num(func(m *ModeResult) int { return m.PaidOrders }))
	add("effects expected", num(func(m *ModeResult) int { return m.Effects }))
	add("effects lost", num(func(m *ModeResult) int { return m.LostEffects }))
	add("repeat calls, same key (absorbed)", num(func(m *ModeResult) int { return m.ExtraCalls }))
	add("reordered", num(func(m *ModeResult) int { return m.Reordered }))
	add("max order latency", func(m *ModeResult) string { return m.MaxOrderLatency.Round(time.Millisecond).String() })
	add("DLQ / dead letters", func(m *ModeResult) string { return fmt.Sprintf("%d / %d", m.DLQ, m.DeadLetters) })
	add("runs lost to a crash (pending rows)", num(func(m *ModeResult) int { return m.Seed.PendingRows }))
	add("work killed by one error (dead rows)", num(func(m *ModeResult) int { return m.Seed.DeadRows }))
	add("redrives that did nothing", num(func(m *ModeResult) int { return m.Seed.RedriveNoEffect }))
	add("process kills", num(func(m *ModeResult) int { return m.Kills }))
	add("power cuts on a FUSE disk", num(func(m *ModeResult) int { return m.PowerCuts }))
	kinds := map[string]bool{}
	for _, m := range r.Modes {
		for k := range m.FaultsApplied {
			kinds[k] = true
		}
	}
	ks := make([]string, 0, len(kinds))
	for k := range kinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		add("faults applied: "+k, num(func(m *ModeResult) int { return m.FaultsApplied[k] }))
	}
	width := make([]int, len(head))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	for i, row := range rows {
		var b strings.Builder
		for j, c := range row {
			fmt.Fprintf(&b, "%-*s  ", width[j], c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if i == 0 {
			fmt.Fprintln(w, strings.Repeat("-", b.Len()))
		}
	}
	for _, m := range r.Modes {
		for _, inv := range m.Invariants {
			if !inv.OK {
				fmt.Fprintf(w, "FAILED (%s): %s %s\n", m.Inbox, inv.Name, inv.Detail)
			}
		}
	}
}
