package ingest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Ingest's half of the MQTT contract test; edge/forward runs the other half
// on the same golden files (edge/wire/testdata).

func loadGolden(t *testing.T) wire.Golden {
	t.Helper()
	g, err := wire.LoadGolden("../../edge/wire/testdata")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// defaultLimits are the limits of a Config with every default, as a
// running ingest has them.
func defaultLimits(t *testing.T) Limits {
	t.Helper()
	c := Config{
		Names:    resources.Names{Stack: "contract"},
		DynamoDB: dynamodb.New(dynamodb.Options{Region: "us-east-1"}),
		Emitter:  noEmitter{},
	}
	c.setDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c.limits()
}

// decode is Handle's path from topic and payload to a decoded event,
// without the device registry: ParseTopic, then DecodeEvent.
func decode(topic string, raw []byte, m wire.GoldenMessage, lim Limits) (wire.Topic, any, error) {
	tp, err := ParseTopic(topic)
	if err != nil {
		return tp, nil, err
	}
	v, err := DecodeEvent(raw, tp.Thing, m.ReceivedAt, lim)
	return tp, &v, err
}

// TestGoldenMessagesDecode decodes every golden message of an events topic
// (and every one whose topic does not parse) with ingest's decoders: an
// accepted one gives its parsed topic and decoded value, a rejected one its
// reason. The v1 telemetry messages are not ingest's: they reach the stream
// through the telemetry_v1 rule and cloud/durable decodes them.
func TestGoldenMessagesDecode(t *testing.T) {
	lim := defaultLimits(t)
	n := 0
	for _, m := range loadGolden(t).Messages {
		if tp, err := wire.ParseTopic(m.Topic); err == nil && tp.Kind == wire.KindTelemetry {
			continue // not ingested by cloud/ingest
		}
		n++
		t.Run(m.Name, func(t *testing.T) {
			tp, got, err := decode(m.Topic, m.Payload, m, lim)
			if m.Reject != "" {
				if reason := ReasonOf(err); reason != Reason(m.Reject) {
					t.Fatalf("%s %s: reason %q (%v); want %q", m.Topic, m.Payload, reason, err, m.Reject)
				}
				if m.RejectField != "" && !strings.Contains(err.Error(), m.RejectField+":") {
					t.Errorf("%s: rejection %q does not name the field %s", m.Name, err, m.RejectField)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s %s: %v; want it accepted", m.Topic, m.Payload, err)
			}
			if tp != m.Parsed {
				t.Errorf("topic %s parsed as %+v; want %+v", m.Topic, tp, m.Parsed)
			}
			if !reflect.DeepEqual(got, m.Event) {
				t.Errorf("decoded %+v;\nwant %+v", got, m.Event)
			}
		})
	}
	if n == 0 {
		t.Fatal("no golden message of an events topic")
	}
}

// TestGoldenNames tries every golden name as tenant and thing of an events
// topic and as an event id: ingest accepts exactly the valid ones, and agrees with the
// engine, which refuses to emit for a tenant that is not engine.ValidTenant.
func TestGoldenNames(t *testing.T) {
	lim := defaultLimits(t)
	for _, n := range loadGolden(t).Names {
		if got := engine.ValidTenant(n.Name); got != n.Valid {
			t.Errorf("engine.ValidTenant(%q) = %t; want %t (wire.ValidName)", n.Name, got, n.Valid)
		}
		// A '/' in a name makes another topic level: refused as such.
		problem := n.Problem
		if strings.Contains(n.Name, "/") {
			problem = "want dt/bowline/<tenant>/<thing>/"
		}
		for _, topic := range []string{
			wire.Topic{Tenant: n.Name, Thing: "bowl-1", Kind: wire.KindEvents}.String(),
			wire.Topic{Tenant: "t1", Thing: n.Name, Kind: wire.KindEvents}.String(),
		} {
			_, err := ParseTopic(topic)
			switch {
			case n.Valid && err != nil:
				t.Errorf("ParseTopic(%q) = %v; want it accepted", topic, err)
			case !n.Valid && (ReasonOf(err) != ReasonBadTopic || !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), problem)):
				t.Errorf("ParseTopic(%q) = %v; want %s saying %q", topic, err, ReasonBadTopic, problem)
			}
		}
		raw := fmt.Appendf(nil, `{"v":1,"thing":"bowl-1","seq":1,"id":%q,"type":"bowl.empty","at":"2026-11-29T11:00:00Z","data":{}}`, n.Name)
		_, err := DecodeEvent(raw, "bowl-1", testNow, lim)
		switch {
		case n.Valid && err != nil:
			t.Errorf("event id %q: %v; want it accepted", n.Name, err)
		case !n.Valid && ReasonOf(err) != ReasonInvalid:
			t.Errorf("event id %q: %v; want %s", n.Name, err, ReasonInvalid)
		}
	}
}

// Ingest decodes the data of every event type gateways publish (with
// wire.Decode), and refuses every other type of the catalog as
// unknown_type: the cloud's own events cannot arrive from a device.
func TestSchemaPerDeviceEventType(t *testing.T) {
	var have []string
	for _, typ := range catalog.Bowline().Types {
		raw := fmt.Appendf(nil, `{"v":1,"thing":"b1","seq":1,"id":"e-1","type":%q,"at":"2026-11-29T11:00:00Z","data":{}}`, typ.Name)
		if _, err := DecodeEvent(raw, "b1", testNow, testLimits); ReasonOf(err) != ReasonUnknownType {
			have = append(have, typ.Name)
		}
	}
	slices.Sort(have)
	want := slices.Sorted(slices.Values(wire.EventTypes))
	if !slices.Equal(have, want) {
		t.Errorf("ingest decodes the data of %v; want exactly wire.EventTypes %v", have, want)
	}
}

// noEmitter satisfies Config.Emitter where nothing is emitted.
type noEmitter struct{}

func (noEmitter) EmitEvent(context.Context, engine.Event) (engine.Envelope, error) {
	return engine.Envelope{}, errors.New("noEmitter: not for emitting")
}
