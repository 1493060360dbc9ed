package rules

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestSQL pins the statements CloudFormation gives AWS IoT.
func TestSQL(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Telemetry, "SELECT 2 AS v, topic(3) AS tenant, topic(4) AS gateway, timestamp() AS received_at, encode(*, 'base64') AS payload FROM 'dt/bowline/+/+/batch'"},
		{TelemetryV1, "SELECT 2 AS v, topic(3) AS tenant, topic(4) AS gateway, timestamp() AS received_at, encode(*, 'base64') AS payload FROM 'dt/bowline/+/+/telemetry'"},
	} {
		if got := tc.spec.SQL(); got != tc.want {
			t.Errorf("%s SQL() = %q; want %q", tc.spec.Base, got, tc.want)
		}
		if got := tc.spec.PartitionKey.Template(); got != "${topic(4)}" {
			t.Errorf("%s partition key = %q; want ${topic(4)}", tc.spec.Base, got)
		}
	}
	if got, want := Events.SQL(), "SELECT 2 AS v, topic(3) AS tenant, topic(4) AS gateway, timestamp() AS received_at, encode(*, 'base64') AS payload FROM 'dt/bowline/+/+/events'"; got != want {
		t.Errorf("events SQL() = %q; want %q", got, want)
	}
	if got := Events.PartitionKey.Template(); got != "${topic(3)}" {
		t.Errorf("events partition key = %q; want ${topic(3)}, the tenant", got)
	}
}

// TestParseSQLRoundTrips: every rule's SQL reads back into the same FROM
// and SELECT list.
func TestParseSQLRoundTrips(t *testing.T) {
	for _, s := range All() {
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: %v", s.Base, err)
		}
		from, items, err := ParseSQL(s.SQL())
		if err != nil {
			t.Fatalf("ParseSQL(%q): %v", s.SQL(), err)
		}
		if from != s.From || !reflect.DeepEqual(items, s.Select) {
			t.Errorf("ParseSQL(%q) = %q, %v; want %q, %v", s.SQL(), from, items, s.From, s.Select)
		}
	}
}

// TestParseSQLRefuses: what the stand-in cannot evaluate is refused.
func TestParseSQLRefuses(t *testing.T) {
	for _, sql := range []string{
		"SELECT * FROM 'dt/bowline/+/+/telemetry'",
		"SELECT topic(3) AS tenant FROM 'a/b' WHERE x = 1",
		"SELECT topic(0) AS tenant FROM 'a/b'",
		"SELECT principal() AS p FROM 'a/b'",
		"SELECT encode(*, 'hex') AS p FROM 'a/b'",
		"SELECT topic(1) FROM 'a/b'",
		"topic(1) AS t FROM 'a/b'",
		"SELECT topic(1) AS t FROM a/b",
	} {
		if _, _, err := ParseSQL(sql); !errors.Is(err, ErrBadSQL) {
			t.Errorf("ParseSQL(%q) err = %v; want ErrBadSQL", sql, err)
		}
	}
}

func TestParseTemplate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Expr
		ok   bool
	}{
		{"${topic(4)}", Topic(4), true},
		{"${ topic( 4 ) }", Topic(4), true},
		{"${timestamp()}", Timestamp(), true},
		{"topic(4)", Expr{}, false},
		{"${topic(4)}-${topic(3)}", Expr{}, false},
		{"${newuuid()}", Expr{}, false},
	} {
		got, err := ParseTemplate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseTemplate(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestEvaluate is the byte-level fixture of record format 2: the record
// the rule writes for a binary batch and a v1 JSON message.
func TestEvaluate(t *testing.T) {
	now := time.UnixMilli(1764633600123)
	batch := []byte{0x02, 0x00, 0xff, 0x10}
	v1 := []byte(`{"v":1,"thing":"gw-1:kitchen"}`)
	for _, tc := range []struct {
		spec    Spec
		topic   string
		payload []byte
		record  string
		key     string
		err     error
	}{
		{Telemetry, "dt/bowline/t1/gw-1/batch", batch,
			`{"v":2,"tenant":"t1","gateway":"gw-1","received_at":1764633600123,"payload":"AgD/EA=="}`, "gw-1", nil},
		{TelemetryV1, "dt/bowline/t1/gw-1:kitchen/telemetry", v1,
			`{"v":2,"tenant":"t1","gateway":"gw-1:kitchen","received_at":1764633600123,"payload":"` + base64.StdEncoding.EncodeToString(v1) + `"}`, "gw-1:kitchen", nil},
		{Telemetry, "dt/bowline/t1/gw-1/batch", nil,
			`{"v":2,"tenant":"t1","gateway":"gw-1","received_at":1764633600123,"payload":""}`, "gw-1", nil},
		{Telemetry, "dt/bowline/t1/gw-1/telemetry", batch, "", "", ErrNoMatch},
		{Telemetry, "$aws/rules/bowline_dev_telemetry/dt/bowline/t1/gw-1/batch", batch, "", "", ErrNoMatch},
		{Telemetry, "dt/bowline/t1/gw-1/batch/x", batch, "", "", ErrNoMatch},
		// Events: the tenant is the partition key, so a tenant's events
		// stay in order on one shard; "gateway" is the thing.
		{Events, "dt/bowline/t1/gw-1:kitchen/events", v1,
			`{"v":2,"tenant":"t1","gateway":"gw-1:kitchen","received_at":1764633600123,"payload":"` + base64.StdEncoding.EncodeToString(v1) + `"}`, "t1", nil},
		{Events, "dt/bowline/t1/gw-1/batch", batch, "", "", ErrNoMatch},
	} {
		rec, key, err := tc.spec.Evaluate(tc.topic, tc.payload, now)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("%s Evaluate(%q) err = %v; want %v", tc.spec.Base, tc.topic, err, tc.err)
			continue
		}
		if string(rec) != tc.record || key != tc.key {
			t.Errorf("%s Evaluate(%q) = %s, %q; want %s, %q", tc.spec.Base, tc.topic, rec, key, tc.record, tc.key)
		}
		if tc.err == nil && !json.Valid(rec) {
			t.Errorf("%s Evaluate(%q) record %s is not JSON", tc.spec.Base, tc.topic, rec)
		}
	}
}

func TestSubscriptions(t *testing.T) {
	if got, want := Telemetry.Subscriptions("dev-eu"), []string{"$aws/rules/bowline_dev_eu_telemetry/dt/bowline/+/+/batch"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Telemetry.Subscriptions = %q; want %q", got, want)
	}
	if got, want := Events.Subscriptions("dev"), []string{"$aws/rules/bowline_dev_events/dt/bowline/+/+/events", "dt/bowline/+/+/events"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Events.Subscriptions = %q; want %q", got, want)
	}
	if got, want := Events.WithoutBroker().Subscriptions("dev"), []string{"$aws/rules/bowline_dev_events/dt/bowline/+/+/events"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Events after the cut-over: Subscriptions = %q; want %q", got, want)
	}
	if got, want := TelemetryV1.Subscriptions("dev"), []string{"$aws/rules/bowline_dev_telemetry_v1/dt/bowline/+/+/telemetry", "dt/bowline/+/+/telemetry"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TelemetryV1.Subscriptions = %q; want %q", got, want)
	}
}

func TestValidateRefuses(t *testing.T) {
	bad := Telemetry
	bad.Select = []Item{{"tenant", Topic(6)}}
	if err := bad.Validate(); !errors.Is(err, ErrBadSpec) {
		t.Errorf("topic(6) of a 5-level filter: Validate = %v; want ErrBadSpec", err)
	}
	bad = Telemetry
	bad.PartitionKey = Timestamp()
	if err := bad.Validate(); !errors.Is(err, ErrBadSpec) {
		t.Errorf("timestamp partition key: Validate = %v; want ErrBadSpec", err)
	}
	bad = Telemetry
	bad.Select = []Item{{"v", Int(1)}, {"v", Int(2)}}
	if err := bad.Validate(); !errors.Is(err, ErrBadSpec) {
		t.Errorf("duplicate name: Validate = %v; want ErrBadSpec", err)
	}
}

// FuzzParseSQL: ParseSQL never panics, and what it reads renders back
// (Spec.SQL) to a statement it reads the same.
func FuzzParseSQL(f *testing.F) {
	for _, s := range All() {
		f.Add(s.SQL())
	}
	f.Add("SELECT topic(1) AS a, 7 AS b FROM 'x/+'")
	f.Add("select timestamp() as t from 'a'")
	f.Fuzz(func(t *testing.T, sql string) {
		from, items, err := ParseSQL(sql)
		if err != nil {
			return
		}
		again := Spec{From: from, Select: items}.SQL()
		from2, items2, err := ParseSQL(again)
		if err != nil || from2 != from || !reflect.DeepEqual(items2, items) {
			t.Fatalf("ParseSQL(%q) = %q, %v; its rendering %q reads as %q, %v (%v)", sql, from, items, again, from2, items2, err)
		}
	})
}
