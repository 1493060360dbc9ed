package forward

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// The forwarder's half of the MQTT contract test; cloud/ingest runs the
// other half on the same golden files (edge/wire/testdata).

func loadGolden(t *testing.T) wire.Golden {
	t.Helper()
	g, err := wire.LoadGolden("../wire/testdata")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// gatewayZone is a zone that is not UTC: outbox times are the gateway's
// clock, and the payload must carry them in UTC whatever the zone.
var gatewayZone = time.FixedZone("gateway", 5*3600+30*60)

// TestGoldenMessagesEncode encodes the decoded value of every accepted
// golden message with the forwarder's encoders, from outbox records as the
// pump reads them, and compares topic and payload byte for byte. Rejected
// messages are ingest's half; the names test below covers the ones the
// gateway could produce.
func TestGoldenMessagesEncode(t *testing.T) {
	for _, m := range loadGolden(t).Messages {
		if m.Reject != "" {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			cfg := Config{Tenant: m.Parsed.Tenant}
			var (
				topic   string
				payload []byte
				err     error
			)
			switch {
			case m.Telemetry != nil:
				tm := m.Telemetry
				b := outbox.Batch{Thing: tm.Thing, First: tm.Seq, Last: tm.LastSeq()}
				cost := envelopeCost(tm.Thing)
				for i, s := range tm.Samples {
					r := outbox.Record{Entry: outbox.Entry{Lane: outbox.Telemetry, Thing: tm.Thing, At: s.T.In(gatewayZone), Type: s.Kind, Value: s.Value}, Seq: tm.Seq + uint64(i)}
					b.Samples = append(b.Samples, r)
					cost += sampleCost(r)
				}
				topic = cfg.topic(tm.Thing, wire.KindTelemetry)
				payload, err = encodeTelemetry(b, tm.SentAt.In(gatewayZone))
				if len(payload) > cost {
					t.Errorf("payload of %d bytes; the batch size estimate was %d (it must be an upper bound, or MaxPayload can be exceeded)", len(payload), cost)
				}
			case m.Event != nil:
				e := m.Event
				data := []byte(e.Data)
				if string(data) == "{}" {
					data = nil // what the outbox holds for an event without data
				}
				r := outbox.Record{Entry: outbox.Entry{Lane: outbox.Events, Thing: e.Thing, At: e.At.In(gatewayZone), Type: e.Type, ID: e.ID, Data: data}, Seq: e.Seq}
				topic = cfg.topic(e.Thing, wire.KindEvents)
				payload, err = encodeEvent(r, e.SentAt.In(gatewayZone))
			}
			if err != nil {
				t.Fatal(err)
			}
			if topic != m.Topic {
				t.Errorf("topic = %s; want %s", topic, m.Topic)
			}
			if !bytes.Equal(payload, m.Payload) {
				t.Errorf("payload =\n%s\nwant\n%s", payload, m.Payload)
			}
		})
	}
}

// TestConfigRefusesWhatIngestRefuses tries every golden name as tenant,
// client id and gateway thing: the forwarder refuses exactly the invalid
// ones, and says which field and value and what is wrong.
func TestConfigRefusesWhatIngestRefuses(t *testing.T) {
	for _, n := range loadGolden(t).Names {
		for _, field := range []string{"tenant", "client_id", "thing"} {
			cfg := Config{Broker: "tcp://127.0.0.1:1883", Tenant: "t1", ClientID: "gw-1", Rule: testRule}
			switch field {
			case "tenant":
				cfg.Tenant = n.Name
			case "client_id":
				cfg.ClientID = n.Name
			case "thing":
				if n.Name == "" {
					continue // an empty thing means the client id
				}
				cfg.Thing = n.Name
			}
			err := cfg.Validate()
			if n.Valid {
				if err != nil {
					t.Errorf("Validate(%s %q) = %v; want nil", field, n.Name, err)
				}
				continue
			}
			if want := fmt.Sprintf("%s %q: %s", field, n.Name, n.Problem); !errors.Is(err, wire.ErrInvalidName) || !strings.Contains(err.Error(), want) {
				t.Errorf("Validate(%s %q) = %v; want wire.ErrInvalidName saying %s", field, n.Name, err, want)
			}
		}
	}
}

// A gateway configured with tenant _acme used to pass Validate while ingest
// dead-lettered every message it sent as bad_topic.
func TestTenantIngestWouldRefuseDoesNotStart(t *testing.T) {
	_, err := New(Config{Broker: "tcp://127.0.0.1:1883", Tenant: "_acme", ClientID: "gw-1"}, nil)
	want := `forward config: tenant "_acme": must start with a letter or digit`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("New(tenant _acme) = %v; want an error starting %q", err, want)
	}
}

// TestGoldenBatchesEncode (the wire v2 half of the contract): for every
// accepted golden batch (edge/wire/testdata/batches.json), outbox records
// holding its samples as the agent stores them (float values, gateway
// clock) go through the forwarder's conversion, and the encoder writes
// exactly the golden CBOR.
func TestGoldenBatchesEncode(t *testing.T) {
	gs, err := batch.LoadGolden("../wire/testdata")
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Config{Broker: "tcp://127.0.0.1:1883", Tenant: "t1", ClientID: "gw-1", Rule: testRule, Logger: testLogger(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range gs {
		if g.Batch == nil || !outboxHolds(g.Batch) {
			continue // refused, or beyond what an outbox record holds (the wire's own golden test covers it)
		}
		n++
		t.Run(g.Name, func(t *testing.T) {
			b := batch.Batch{Outbox: g.Batch.Outbox, SentAt: g.Batch.SentAt.In(gatewayZone)}
			for _, s := range g.Batch.Things {
				var recs []outbox.Record
				for _, x := range s.Samples {
					if v, scale, err := scaled(x.Kind, x.Float()); err != nil || v != x.Value || scale != x.Scale {
						t.Fatalf("%s seq %d: %s %v converts to %d at scale %d (%v); want %d at scale %d", s.Thing, x.Seq, x.Kind, x.Float(), v, scale, err, x.Value, x.Scale)
					}
					recs = append(recs, outbox.Record{Entry: outbox.Entry{Lane: outbox.Telemetry, Thing: s.Thing, At: x.At.In(gatewayZone), Type: x.Kind, Value: x.Float()}, Seq: x.Seq})
				}
				samples, seqs := f.samplesOf(s.Thing, recs)
				if len(seqs) != len(recs) {
					t.Fatalf("%s: %d of %d samples converted", s.Thing, len(seqs), len(recs))
				}
				b.Things = append(b.Things, batch.Series{Thing: s.Thing, Samples: samples})
			}
			b.SentAt = b.SentAt.UTC()
			p, err := batch.Encode(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(p) == 0 || p[0] != batch.Format {
				t.Fatalf("payload starts %x; want format byte %x", p[:1], batch.Format)
			}
			cbor, err := io.ReadAll(flate.NewReader(bytes.NewReader(p[1:])))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(cbor, g.CBOR) {
				t.Errorf("encoded CBOR =\n%x\nwant\n%x", cbor, g.CBOR)
			}
		})
	}
	if n == 0 {
		t.Fatal("no accepted golden batch")
	}
}

// outboxHolds reports whether every value of b fits an outbox record's
// float64 exactly (|v| <= 2^53): the golden batch of int64 extremes does
// not, and no gateway can send it.
func outboxHolds(b *batch.Batch) bool {
	for _, s := range b.Things {
		for _, x := range s.Samples {
			if x.Value > 1<<53 || x.Value < -(1<<53) {
				return false
			}
		}
	}
	return true
}
