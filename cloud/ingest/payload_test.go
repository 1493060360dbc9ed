package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/edge/wire"
)

var (
	testNow    = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	testLimits = Limits{MaxPayload: 1024, MaxFutureSkew: 5 * time.Minute}
)

func TestDecodeEvent(t *testing.T) {
	ev := func(typ, data string) string {
		return `{"v":1,"thing":"b1","seq":3,"id":"e-1","type":"` + typ + `","at":"2026-11-29T11:00:00Z","data":` + data + `}`
	}
	for _, c := range []struct {
		name string
		raw  string
		want Reason
	}{
		{"meal", ev("bowl.meal_finished", `{"grams_eaten":42.5,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"tag-7"}`), ""},
		{"meal without pet", ev("bowl.meal_finished", `{"grams_eaten":42.5,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":""}`), ""},
		{"meal missing field", ev("bowl.meal_finished", `{"grams_eaten":42.5,"duration_s":90,"pet_tag":"x"}`), ReasonInvalid},
		{"meal negative grams", ev("bowl.meal_finished", `{"grams_eaten":-1,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`), ReasonInvalid},
		{"meal grams as string", ev("bowl.meal_finished", `{"grams_eaten":"42","duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`), ReasonInvalid},
		{"meal future start", ev("bowl.meal_finished", `{"grams_eaten":1,"duration_s":90,"started_at":"2027-01-01T00:00:00Z","pet_tag":"x"}`), ReasonInvalid},
		// null was taken as 0 or "" before edge/wire decoded the data; the
		// meal then failed in record_intake.
		{"meal grams null", ev("bowl.meal_finished", `{"grams_eaten":null,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`), ReasonInvalid},
		{"meal grams 1e400", ev("bowl.meal_finished", `{"grams_eaten":1e400,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`), ReasonInvalid},
		{"refilled", ev("bowl.refilled", `{"grams_added":200,"level_g":450}`), ""},
		{"food low", ev("bowl.food_low", `{"level_g":40,"threshold_g":50}`), ""},
		{"empty without data", ev("bowl.empty", `{}`), ""},
		{"empty null data", ev("bowl.empty", `null`), ""},
		{"empty with level", ev("bowl.empty", `{"level_g":0}`), ""},
		{"fault", ev("bowl.device_fault", `{"code":"E_SCALE","detail":"load cell open"}`), ""},
		{"fault empty code", ev("bowl.device_fault", `{"code":"","detail":"x"}`), ReasonInvalid},
		// The edge agent sends the firmware's numeric code (4: ring overflow).
		{"fault numeric code", ev("bowl.device_fault", `{"code":4,"detail":"77 readings refused: ring full"}`), ""},
		{"fault negative code", ev("bowl.device_fault", `{"code":-1,"detail":"x"}`), ReasonInvalid},
		{"fault fractional code", ev("bowl.device_fault", `{"code":1.5,"detail":"x"}`), ReasonInvalid},
		{"fault object code", ev("bowl.device_fault", `{"code":{},"detail":"x"}`), ReasonInvalid},
		{"dropped", ev("bowl.telemetry_dropped", `{"from_seq":10,"to_seq":19,"count":10,"from":"2026-11-20T00:00:00Z","to":"2026-11-20T00:01:00Z","reason":"ttl"}`), ""},
		{"dropped fractional", ev("bowl.telemetry_dropped", `{"from_seq":1.5,"to_seq":19,"count":10,"reason":"ttl"}`), ReasonInvalid},
		{"unknown data field", ev("bowl.refilled", `{"grams_added":200,"level_g":450,"tenant":"t2"}`), ReasonInvalid},
		{"data not object", ev("bowl.refilled", `[1]`), ReasonInvalid},
		{"cloud-only type", ev("bowl.data_gap", `{}`), ReasonUnknownType},
		{"commerce type", ev("com.payment_completed", `{}`), ReasonUnknownType},
		{"bad id", `{"v":1,"thing":"b1","seq":3,"id":"a/b","type":"bowl.empty","at":"2026-11-29T11:00:00Z","data":{}}`, ReasonInvalid},
		{"no at", `{"v":1,"thing":"b1","seq":3,"id":"e","type":"bowl.empty","data":{}}`, ReasonInvalid},
		{"future at", `{"v":1,"thing":"b1","seq":3,"id":"e","type":"bowl.empty","at":"2026-11-29T13:00:00Z","data":{}}`, ReasonFutureTimestamp},
		{"seq 0", `{"v":1,"thing":"b1","seq":0,"id":"e","type":"bowl.empty","at":"2026-11-29T11:00:00Z","data":{}}`, ReasonInvalid},
		{"trailing data", ev("bowl.empty", `{}`) + `{}`, ReasonMalformedJSON},
		// The envelope, checked before the event's fields.
		{"malformed", `{"v":1,"thing":"b1",`, ReasonMalformedJSON},
		{"not an object", `[1]`, ReasonMalformedJSON},
		{"no version", `{"thing":"b1","seq":1}`, ReasonBadVersion},
		{"version 2", `{"v":2,"thing":"b1","future":true}`, ReasonBadVersion},
		{"version string", `{"v":"1","thing":"b1"}`, ReasonBadVersion},
		{"other thing", `{"v":1,"thing":"b2","seq":3,"id":"e","type":"bowl.empty","at":"2026-11-29T11:00:00Z","data":{}}`, ReasonThingMismatch},
		{"no thing", `{"v":1,"seq":1}`, ReasonThingMismatch},
		{"unknown field", `{"v":1,"thing":"b1","tenant":"t2","seq":3,"id":"e","type":"bowl.empty","at":"2026-11-29T11:00:00Z","data":{}}`, ReasonMalformedJSON},
		{"oversize", `{"v":1,"thing":"b1","pad":"` + strings.Repeat("x", 4096) + `"}`, ReasonOversize},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeEvent([]byte(c.raw), "b1", testNow, Limits{MaxPayload: 4096, MaxFutureSkew: 5 * time.Minute})
			if got := ReasonOf(err); got != c.want {
				t.Errorf("DecodeEvent(%s) reason = %q (%v); want %q", c.raw, got, err, c.want)
			}
		})
	}
}

func TestParseTopic(t *testing.T) {
	for _, c := range []struct {
		topic string
		want  wire.Topic
		ok    bool
	}{
		{"dt/bowline/t1/bowl-1/events", wire.Topic{Tenant: "t1", Thing: "bowl-1", Kind: wire.KindEvents}, true},
		{"dt/bowline/t1/bowl-1/telemetry", wire.Topic{}, false}, // the topic rules' (docs/telemetry-path.md)
		{"dt/bowline/t1/bowl:1/events", wire.Topic{Tenant: "t1", Thing: "bowl:1", Kind: wire.KindEvents}, true},
		{"dt/bowline/t1/bowl-1/status", wire.Topic{}, false},
		{"dt/bowline/t1/bowl-1", wire.Topic{}, false},
		{"dt/other/t1/bowl-1/events", wire.Topic{}, false},
		{"dt/bowline/t#1/bowl-1/events", wire.Topic{}, false},
		{"dt/bowline/_acme/bowl-1/events", wire.Topic{}, false},
		{"dt/bowline/t1/_bowl/events", wire.Topic{}, false},
		{"dt/bowline/t1//events", wire.Topic{}, false},
		{"dt/bowline/t1/a/b/events", wire.Topic{}, false},
	} {
		got, err := ParseTopic(c.topic)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseTopic(%q) = %+v, %v; want %+v, ok=%v", c.topic, got, err, c.want, c.ok)
		}
		if err != nil && ReasonOf(err) != ReasonBadTopic {
			t.Errorf("ParseTopic(%q) reason = %q; want %q", c.topic, ReasonOf(err), ReasonBadTopic)
		}
	}
}

func TestCatalogDeclaresIngestTypes(t *testing.T) {
	if err := checkCatalog(); err != nil {
		t.Fatal(err)
	}
}

func TestPayloadDigestIgnoresLayout(t *testing.T) {
	a, err := payloadDigest([]byte(`{"v":1,"thing":"b1","data":{"b":2,"a":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := payloadDigest([]byte("{ \"thing\": \"b1\", \"v\": 1, \"data\": {\"a\":1, \"b\":2} }"))
	c, _ := payloadDigest([]byte(`{"v":1,"thing":"b1","data":{"b":3,"a":1}}`))
	if a != b {
		t.Errorf("digest of reordered payload = %s; want %s", b, a)
	}
	if a == c {
		t.Errorf("digest of a different payload = %s; want it to differ", c)
	}
}
