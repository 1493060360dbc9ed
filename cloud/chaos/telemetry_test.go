package chaos

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// record is a record-format-2 Kinesis record of one batch: thing's
// samples with the given seqs, from outbox ob.
func record(t *testing.T, ob, thing string, seqs ...uint64) []byte {
	t.Helper()
	at := time.UnixMilli(1_700_000_000_000)
	s := batch.Series{Thing: thing}
	for i, q := range seqs {
		s.Samples = append(s.Samples, batch.Sample{Seq: q, At: at.Add(time.Duration(i) * 50 * time.Millisecond), Kind: "weight_g", Value: 1000 + int64(i), Scale: 3})
	}
	payload, err := batch.Encode(batch.Batch{Outbox: ob, SentAt: at, Things: []batch.Series{s}})
	if err != nil {
		t.Fatalf("encode batch: %v", err)
	}
	b, _ := json.Marshal(map[string]any{"v": 2, "tenant": "chaos-t0", "gateway": "chaos-gw-0", "received_at": at.UnixMilli(),
		"payload": base64.StdEncoding.EncodeToString(payload)})
	return b
}

// The stream's samples count once by (thing, outbox, seq): a resent batch
// is a duplicate record and its samples duplicates; a seq missing under
// the highest of its outbox is a hole, and another outbox instance's seqs
// are their own line; a record that does not decode is counted.
func TestTelemetryDedupAndHoles(t *testing.T) {
	const thing = "chaos-gw-0:bowl-000"
	tel := &telemetry{ranges: map[string][][2]uint64{}, seen: map[string]map[string]map[uint64]bool{}}
	tel.add(record(t, "ob1", thing, 1, 2, 3))
	tel.add(record(t, "ob1", thing, 1, 2, 3)) // sent again after the ack timeout
	tel.add(record(t, "ob1", thing, 3, 4, 6))
	tel.add(record(t, "ob2", thing, 1, 2))
	tel.add([]byte(`{"v":2,"payload":"AA=="}`))
	if tel.samples != 7 || tel.duplicates != 1 || tel.duplicateSamples != 4 || tel.undecodable != 1 {
		t.Errorf("samples %d, duplicate records %d, duplicate samples %d, undecodable %d; want 7, 1, 4, 1",
			tel.samples, tel.duplicates, tel.duplicateSamples, tel.undecodable)
	}
	if n, detail := tel.holes(); n != 1 {
		t.Errorf("holes() = %d %v; want 1 (seq 5 of ob1)", n, detail)
	}
	if !tel.has(thing, "ob1", 4, 5) || tel.has(thing, "ob1", 5, 5) || tel.has(thing, "ob2", 3, 9) {
		t.Error("has: want ob1 4-5 held, ob1 5-5 and ob2 3-9 not")
	}
}

// A gateway counter adds up over agent restarts, told by the uptime
// going back even when the new count has passed the old one.
func TestCounterOverRestarts(t *testing.T) {
	var c counter
	c.observe(1*time.Second, 10)
	c.observe(2*time.Second, 30)
	c.observe(500*time.Millisecond, 40) // restarted, and already past 30
	c.observe(1500*time.Millisecond, 45)
	if c.total != 75 {
		t.Errorf("total = %d; want 75 (30 before the restart, 45 after)", c.total)
	}
}
