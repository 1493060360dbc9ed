package engine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/bowline-iot/bowline/engine"
)

func TestJCSVectors(t *testing.T) {
	ins, err := filepath.Glob("testdata/jcs/*.in.json")
	if err != nil || len(ins) == 0 {
		t.Fatalf("glob testdata/jcs: %v (%d files)", err, len(ins))
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(in, ".in.json") + ".out.json")
			if err != nil {
				t.Fatal(err)
			}
			got, err := jcs.Transform(raw)
			if err != nil {
				t.Fatalf("jcs.Transform(%s): %v", name, err)
			}
			if !bytes.Equal(got, bytes.TrimRight(want, "\n")) {
				t.Errorf("jcs.Transform(%s) = %s; want %s", name, got, want)
			}
		})
	}
}

func fixtureEnvelope() engine.Envelope {
	return engine.Envelope{
		ID:            "01JDQ4Z8K9X2M3N4P5Q6R7S8T9",
		Type:          "bowl.meal_finished",
		Tenant:        "t1",
		CorrelationID: "req-1",
		Actor:         "bowl-42",
		OccurredAt:    time.Date(2026, 11, 29, 12, 0, 0, 123000000, time.UTC),
		Payload: map[string]any{
			"grams_eaten": 412.5, "duration_s": 95.0, "pet_tag": "Ω-tag",
			"started_at": "2026-11-29T11:58:25Z", "nested": map[string]any{"b": []any{1.0, "x", nil, true}, "a": 1e30},
		},
		Seq: 1,
	}
}

// The canonical bytes and hash of one envelope are fixed: if this test
// breaks, every stored chain breaks with it.
func TestChainHashFixture(t *testing.T) {
	env := fixtureEnvelope()
	canon, err := engine.CanonicalEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	const wantCanon = `{"actor":"bowl-42","correlation_id":"req-1","id":"01JDQ4Z8K9X2M3N4P5Q6R7S8T9","occurred_at":"2026-11-29T12:00:00.123000000Z","payload":{"duration_s":95,"grams_eaten":412.5,"nested":{"a":1e+30,"b":[1,"x",null,true]},"pet_tag":"Ω-tag","started_at":"2026-11-29T11:58:25Z"},"seq":1,"tenant":"t1","type":"bowl.meal_finished"}`
	if string(canon) != wantCanon {
		t.Errorf("CanonicalEnvelope = %s; want %s", canon, wantCanon)
	}
	const wantHash = "692174f4447a08270dddcc31873ba9cc4c78439c56ef76c99e50f485d7d0b10e"
	for i := 0; i < 3; i++ {
		h, err := engine.ChainHash(engine.Genesis, env)
		if err != nil {
			t.Fatal(err)
		}
		if h != wantHash {
			t.Errorf("ChainHash(Genesis, fixture) run %d = %s; want %s", i, h, wantHash)
		}
	}
}

func TestChainHashCoversEveryField(t *testing.T) {
	base := fixtureEnvelope()
	h0, _ := engine.ChainHash(engine.Genesis, base)
	changes := map[string]func(*engine.Envelope){
		"id":             func(e *engine.Envelope) { e.ID = "01JDQ4Z8K9X2M3N4P5Q6R7S8TA" },
		"type":           func(e *engine.Envelope) { e.Type = "bowl.refilled" },
		"tenant":         func(e *engine.Envelope) { e.Tenant = "t2" },
		"correlation_id": func(e *engine.Envelope) { e.CorrelationID = "req-2" },
		"actor":          func(e *engine.Envelope) { e.Actor = "bowl-43" },
		"occurred_at":    func(e *engine.Envelope) { e.OccurredAt = e.OccurredAt.Add(time.Nanosecond) },
		"payload":        func(e *engine.Envelope) { e.Payload = map[string]any{"grams_eaten": 412.6} },
		"seq":            func(e *engine.Envelope) { e.Seq = 2 },
	}
	for field, change := range changes {
		env := fixtureEnvelope()
		change(&env)
		h, err := engine.ChainHash(engine.Genesis, env)
		if err != nil {
			t.Fatal(err)
		}
		if h == h0 {
			t.Errorf("changing %s left the hash at %s; want a different hash", field, h)
		}
	}
	if h, _ := engine.ChainHash(strings.Repeat("1", 64), base); h == h0 {
		t.Errorf("changing prev_hash left the hash at %s; want a different hash", h)
	}
}
