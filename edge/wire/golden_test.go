package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func loadGolden(t testing.TB) Golden {
	t.Helper()
	g, err := LoadGolden("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Messages) == 0 || len(g.Names) == 0 {
		t.Fatalf("golden: %d messages, %d names; want some of each", len(g.Messages), len(g.Names))
	}
	return g
}

// TestGoldenMessagesMatchTheTypes checks the golden files against this
// package alone: an accepted message's topic parses to its parsed topic and
// prints back, and its payload is exactly encoding/json's form of its
// decoded value in these types (so the fixtures cannot disagree with the
// struct tags). Both sides' contract tests then hold their code to them.
func TestGoldenMessagesMatchTheTypes(t *testing.T) {
	g := loadGolden(t)
	types := map[string]bool{}
	for _, m := range g.Messages {
		t.Run(m.Name, func(t *testing.T) {
			if m.Reject != "" {
				return
			}
			tp, err := ParseTopic(m.Topic)
			if err != nil || tp != m.Parsed || tp.String() != m.Topic {
				t.Fatalf("ParseTopic(%q) = %+v, %v; want %+v", m.Topic, tp, err, m.Parsed)
			}
			var v any = m.Telemetry
			if m.Event != nil {
				v = m.Event
				types[m.Event.Type] = true
				if !ValidName(m.Event.ID) {
					t.Errorf("event id %q is not a valid name", m.Event.ID)
				}
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, m.Payload) {
				t.Errorf("json of the decoded value =\n%s\nwant the payload\n%s", got, m.Payload)
			}
			back := reflect.New(reflect.TypeOf(v).Elem())
			if err := json.Unmarshal(m.Payload, back.Interface()); err != nil || !reflect.DeepEqual(back.Interface(), v) {
				t.Errorf("payload decodes to %+v (%v); want %+v", back.Elem().Interface(), err, reflect.ValueOf(v).Elem().Interface())
			}
		})
	}
	for _, typ := range EventTypes {
		if !types[typ] {
			t.Errorf("no accepted golden event of type %s; want one per type gateways publish", typ)
		}
	}
}
