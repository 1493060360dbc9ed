package ingest

import (
	"encoding/json"
	"testing"
	"time"
)

// TestGatewayClockAheadIsCorrected: a gateway whose clock is 10 minutes
// ahead (sent_at 12:10 for a message received at 12:00) keeps its event:
// it is accepted, flagged "ahead" and moved back by 10 minutes. Before
// sent_at, every message of such a gateway was rejected as
// future_timestamp and acknowledged: its data was lost.
func TestGatewayClockAheadIsCorrected(t *testing.T) {
	raw := `{"v":1,"thing":"bowl-1","seq":5,"id":"refill-5","type":"bowl.refilled","at":"2026-11-29T12:09:00Z","data":{"grams_added":200,"level_g":450},"sent_at":"2026-11-29T12:10:00Z"}`
	e, fix, err := decodeEvent([]byte(raw), "bowl-1", testNow, testLimits)
	if err != nil {
		t.Fatalf("decode an event of a gateway 10 min ahead: %v; want it accepted", err)
	}
	if fix.Reason != ClockAhead || fix.Skew != 10*time.Minute {
		t.Fatalf("clock fix = %+v; want ahead by 10m", fix)
	}
	if err := fix.correctEvent(&e); err != nil {
		t.Fatal(err)
	}
	if got, want := e.At, testNow.Add(-time.Minute); !got.Equal(want) {
		t.Fatalf("corrected event time = %v; want %v", got, want)
	}
}

// TestGatewayClockAt1970IsCorrected: a gateway that booted without a clock
// stamps 1970; its sent_at gives the offset, so the event and the
// timestamps in its data land on the right day, flagged "unset".
func TestGatewayClockAt1970IsCorrected(t *testing.T) {
	raw := `{"v":1,"thing":"bowl-1","seq":3,"id":"meal-9.0","type":"bowl.meal_finished","at":"1970-01-01T00:09:00Z","data":{"grams_eaten":42.5,"duration_s":95,"started_at":"1970-01-01T00:07:25Z","pet_tag":"tag-7"},"sent_at":"1970-01-01T00:10:00Z"}`
	e, fix, err := decodeEvent([]byte(raw), "bowl-1", testNow, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if fix.Reason != ClockUnset {
		t.Fatalf("clock fix = %+v; want unset", fix)
	}
	if err := fix.correctEvent(&e); err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(-time.Minute); !e.At.Equal(want) {
		t.Errorf("corrected event time = %v; want %v", e.At, want)
	}
	var data struct {
		StartedAt time.Time `json:"started_at"`
		Grams     float64   `json:"grams_eaten"`
	}
	if err := json.Unmarshal(e.Data, &data); err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(-2*time.Minute - 35*time.Second); !data.StartedAt.Equal(want) || data.Grams != 42.5 {
		t.Errorf("corrected data = %+v (%s); want started_at %v and the other fields kept", data, e.Data, want)
	}
}

// TestGatewayClockLeftAlone: a clock behind by minutes, or a message
// delayed in transit, is indistinguishable from a redelivery and is not
// corrected; nor is a message without sent_at.
func TestGatewayClockLeftAlone(t *testing.T) {
	for _, sent := range []time.Time{{}, testNow.Add(-3 * time.Hour), testNow.Add(4 * time.Minute), time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)} {
		if fix := clockFix(sent, testNow, testLimits); fix.Reason != "" {
			t.Errorf("clockFix(sent_at %v) = %+v; want no fix", sent, fix)
		}
	}
}

// TestDigestIgnoresSentAt: a redelivered event encoded again carries a new
// sent_at; it must still be the same event, not a conflict.
func TestDigestIgnoresSentAt(t *testing.T) {
	a, err := payloadDigest([]byte(`{"v":1,"id":"x","sent_at":"2026-11-29T12:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := payloadDigest([]byte(`{"id":"x", "v":1,"sent_at":"2026-11-29T12:07:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := payloadDigest([]byte(`{"v":1,"id":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a != c {
		t.Errorf("digests %s, %s, %s; want one", a, b, c)
	}
}
