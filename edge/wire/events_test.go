package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	evNow  = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	evOpts = DecodeOptions{Now: evNow, MaxFutureSkew: 5 * time.Minute}
)

func float(v float64) *float64 { return &v }

// TestDecode is the fixture table of the strict decoders: data bytes, the
// value they decode to, or the field and the problem of the refusal.
func TestDecode(t *testing.T) {
	meal := `"grams_eaten":42.5,"duration_s":90,"started_at":"2026-11-29T10:58:30Z"`
	for _, c := range []struct {
		name, typ, data string
		want            Data
		field, problem  string // refused: the DataError's field and a part of its problem
	}{
		{name: "meal", typ: TypeMealFinished, data: `{` + meal + `,"pet_tag":"tag-7"}`,
			want: MealFinished{GramsEaten: 42.5, DurationS: 90, StartedAt: time.Date(2026, 11, 29, 10, 58, 30, 0, time.UTC), PetTag: "tag-7"}},
		{name: "meal untagged", typ: TypeMealFinished, data: `{` + meal + `,"pet_tag":""}`,
			want: MealFinished{GramsEaten: 42.5, DurationS: 90, StartedAt: time.Date(2026, 11, 29, 10, 58, 30, 0, time.UTC)}},
		{name: "meal missing pet_tag", typ: TypeMealFinished, data: `{` + meal + `}`, field: "data", problem: `missing field "pet_tag" (want a string)`},
		{name: "meal missing started_at", typ: TypeMealFinished, data: `{"grams_eaten":42.5,"duration_s":90,"pet_tag":"x"}`, field: "data", problem: `missing field "started_at"`},
		{name: "meal negative grams", typ: TypeMealFinished, data: `{"grams_eaten":-1,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`, field: "data.grams_eaten", problem: "negative"},
		{name: "meal grams as string", typ: TypeMealFinished, data: `{"grams_eaten":"42","duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`, field: "data.grams_eaten", problem: "is a string; want a number"},
		{name: "meal grams null", typ: TypeMealFinished, data: `{"grams_eaten":null,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`, field: "data.grams_eaten", problem: "is null"},
		{name: "meal grams 1e400", typ: TypeMealFinished, data: `{"grams_eaten":1e400,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`, field: "data.grams_eaten", problem: "is the number 1e400; want a number"},
		{name: "meal grams huge digits", typ: TypeMealFinished, data: `{"grams_eaten":` + strings.Repeat("9", 400) + `,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"x"}`, field: "data.grams_eaten", problem: "..."},
		{name: "meal future start", typ: TypeMealFinished, data: `{"grams_eaten":1,"duration_s":90,"started_at":"2027-01-01T00:00:00Z","pet_tag":"x"}`, field: "data.started_at", problem: "is in the future"},
		{name: "meal start not a time", typ: TypeMealFinished, data: `{"grams_eaten":1,"duration_s":90,"started_at":"yesterday","pet_tag":"x"}`, field: "data.started_at", problem: "want an RFC 3339 time"},
		{name: "meal tag 65", typ: TypeMealFinished, data: `{` + meal + `,"pet_tag":"` + strings.Repeat("9", 65) + `"}`, field: "data.pet_tag", problem: "is 65 bytes long, more than 64"},
		{name: "meal tag hash", typ: TypeMealFinished, data: `{` + meal + `,"pet_tag":"a#b"}`, field: "data.pet_tag", problem: "must not contain '#'"},
		{name: "meal key case differs", typ: TypeMealFinished, data: `{` + meal + `,"Pet_Tag":"x"}`, field: "data", problem: `unknown field "Pet_Tag"`},
		{name: "refilled", typ: TypeRefilled, data: `{"grams_added":200,"level_g":-3.5}`, want: Refilled{GramsAdded: 200, LevelG: -3.5}},
		{name: "refilled unknown field", typ: TypeRefilled, data: `{"grams_added":200,"level_g":450,"tenant":"t2"}`, field: "data", problem: `unknown field "tenant"`},
		{name: "refilled not an object", typ: TypeRefilled, data: `[1]`, field: "data", problem: "is not a JSON object"},
		{name: "refilled a string", typ: TypeRefilled, data: `"x"`, field: "data", problem: "is not a JSON object"},
		{name: "food low", typ: TypeFoodLow, data: `{"level_g":40,"threshold_g":50}`, want: FoodLow{LevelG: 40, ThresholdG: 50}},
		{name: "food low level an object", typ: TypeFoodLow, data: `{"level_g":{"a":1},"threshold_g":50}`, field: "data.level_g", problem: "is an object; want a number"},
		{name: "empty {}", typ: TypeEmpty, data: `{}`, want: Empty{}},
		{name: "empty null", typ: TypeEmpty, data: `null`, want: Empty{}},
		{name: "empty no data", typ: TypeEmpty, data: ``, want: Empty{}},
		{name: "empty with level", typ: TypeEmpty, data: `{"level_g":0}`, want: Empty{LevelG: float(0)}},
		{name: "empty level null", typ: TypeEmpty, data: `{"level_g":null}`, field: "data.level_g", problem: "is null"},
		{name: "fault named", typ: TypeDeviceFault, data: `{"code":"E_SCALE","detail":"load cell open"}`, want: DeviceFault{Code: NamedFault("E_SCALE"), Detail: "load cell open"}},
		{name: "fault numeric", typ: TypeDeviceFault, data: `{"code":4,"detail":""}`, want: DeviceFault{Code: NumericFault(4)}},
		{name: "fault empty code", typ: TypeDeviceFault, data: `{"code":"","detail":"x"}`, field: "data.code", problem: "is empty"},
		{name: "fault code 65", typ: TypeDeviceFault, data: `{"code":"` + strings.Repeat("E", 65) + `","detail":"x"}`, field: "data.code", problem: "more than 64"},
		{name: "fault negative code", typ: TypeDeviceFault, data: `{"code":-1,"detail":"x"}`, field: "data.code", problem: "want a name or a whole number >= 0"},
		{name: "fault fractional code", typ: TypeDeviceFault, data: `{"code":1.5,"detail":"x"}`, field: "data.code", problem: "want a name or a whole number >= 0"},
		{name: "fault code over 2^53", typ: TypeDeviceFault, data: `{"code":9007199254740993,"detail":"x"}`, field: "data.code", problem: "more than 9007199254740992"},
		{name: "fault code over uint64", typ: TypeDeviceFault, data: `{"code":99999999999999999999999,"detail":"x"}`, field: "data.code", problem: "want a name or a whole number"},
		{name: "fault object code", typ: TypeDeviceFault, data: `{"code":{},"detail":"x"}`, field: "data.code", problem: "is an object"},
		{name: "fault detail null", typ: TypeDeviceFault, data: `{"code":4,"detail":null}`, field: "data.detail", problem: "is null"},
		{name: "fault detail 513", typ: TypeDeviceFault, data: `{"code":4,"detail":"` + strings.Repeat("x", 513) + `"}`, field: "data.detail", problem: "is 513 bytes long"},
		{name: "fault detail U+FFFF", typ: TypeDeviceFault, data: `{"code":4,"detail":"a\uffff"}`, field: "data.detail", problem: "U+FFFF"},
		{name: "dropped", typ: TypeTelemetryDropped, data: `{"from_seq":10,"to_seq":19,"count":10,"from":"2026-11-20T00:00:00Z","to":"2026-11-20T00:01:00Z","reason":"ttl"}`,
			want: TelemetryDropped{FromSeq: 10, ToSeq: 19, Count: 10, From: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 20, 0, 1, 0, 0, time.UTC), Reason: "ttl"}},
		{name: "dropped without times", typ: TypeTelemetryDropped, data: `{"from_seq":10,"to_seq":19,"count":10,"reason":"disk_cap"}`, want: TelemetryDropped{FromSeq: 10, ToSeq: 19, Count: 10, Reason: "disk_cap"}},
		{name: "dropped fractional", typ: TypeTelemetryDropped, data: `{"from_seq":1.5,"to_seq":19,"count":10,"reason":"ttl"}`, field: "data.from_seq", problem: "is the number 1.5; want a whole number >= 0"},
		{name: "dropped negative", typ: TypeTelemetryDropped, data: `{"from_seq":1,"to_seq":19,"count":-1,"reason":"ttl"}`, field: "data.count", problem: "want a whole number >= 0"},
		{name: "dropped over 2^53", typ: TypeTelemetryDropped, data: `{"from_seq":1,"to_seq":18446744073709551615,"count":1,"reason":"ttl"}`, field: "data.to_seq", problem: "more than"},
		{name: "dropped future to", typ: TypeTelemetryDropped, data: `{"from_seq":1,"to_seq":2,"count":2,"to":"2026-11-29T12:06:00Z","reason":"ttl"}`, field: "data.to", problem: "in the future"},
		{name: "dropped empty reason", typ: TypeTelemetryDropped, data: `{"from_seq":1,"to_seq":2,"count":2,"reason":""}`, field: "data.reason", problem: "is empty"},
		{name: "counter reset", typ: TypeCounterReset, data: `{"old_epoch":305419896,"new_epoch":2596015599,"last_seq":1234,"first_seq":1}`,
			want: CounterReset{OldEpoch: 305419896, NewEpoch: 2596015599, LastSeq: 1234, FirstSeq: 1}},
		{name: "counter reset bool", typ: TypeCounterReset, data: `{"old_epoch":true,"new_epoch":1,"last_seq":1,"first_seq":1}`, field: "data.old_epoch", problem: "is a boolean"},
		{name: "deep nesting", typ: TypeRefilled, data: `{"grams_added":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `,"level_g":1}`, field: "data", problem: "is not a valid JSON object"},
		{name: "truncated", typ: TypeRefilled, data: `{"grams_added":1,`, field: "data", problem: "is not a valid JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode(c.typ, []byte(c.data), evOpts)
			if c.field == "" {
				if err != nil || !reflect.DeepEqual(got, c.want) {
					t.Fatalf("Decode(%s, %.80s) = %#v, %v; want %#v", c.typ, c.data, got, err, c.want)
				}
				return
			}
			var de *DataError
			if !errors.As(err, &de) || !errors.Is(err, ErrInvalidData) {
				t.Fatalf("Decode(%s, %.80s) = %#v, %v; want a *DataError", c.typ, c.data, got, err)
			}
			if de.Type != c.typ || de.Field != c.field || !strings.Contains(de.Problem, c.problem) {
				t.Errorf("Decode(%s, %.80s) error = %q (type %q, field %q); want type %q, field %q, problem containing %q", c.typ, c.data, err, de.Type, de.Field, c.typ, c.field, c.problem)
			}
			if !strings.HasPrefix(err.Error(), c.typ+" "+c.field+": ") {
				t.Errorf("error %q; want it to start with %q", err, c.typ+" "+c.field+": ")
			}
			if len(err.Error()) > 600 {
				t.Errorf("error is %d bytes; want the value left out", len(err.Error()))
			}
		})
	}
}

func TestDecodeUnknownType(t *testing.T) {
	for _, typ := range []string{"bowl.data_gap", "com.payment_completed", ""} {
		if _, err := Decode(typ, []byte(`{}`), evOpts); !errors.Is(err, ErrUnknownType) {
			t.Errorf("Decode(%q) = %v; want ErrUnknownType", typ, err)
		}
	}
}

// A key given twice counts once, the last one: what Decode checks is what
// encoding/json gives every later reader (ingest's payload map), so a
// first value cannot pass the check for a second one.
func TestDecodeDuplicateKeyTakesTheLast(t *testing.T) {
	data := `{"code":4,"detail":"ok","detail":"bad\u0000"}`
	if _, err := Decode(TypeDeviceFault, []byte(data), evOpts); err == nil {
		t.Fatalf("Decode(%s) accepted; want the last detail checked", data)
	}
	var later map[string]any
	_ = json.Unmarshal([]byte(data), &later)
	if later["detail"] != "bad\x00" {
		t.Fatalf("encoding/json's map takes %q; the test assumes the last", later["detail"])
	}
}

func TestDecodeAllowUnknown(t *testing.T) {
	payload := `{"grams_eaten":1,"duration_s":2,"started_at":"2026-11-29T10:58:30Z","pet_tag":"p","thing":"b1","device_seq":3}`
	m, err := DecodeAs[MealFinished]([]byte(payload), DecodeOptions{AllowUnknown: true})
	if err != nil || m.GramsEaten != 1 || m.PetTag != "p" {
		t.Fatalf("DecodeAs(%s) = %+v, %v; want the meal", payload, m, err)
	}
	if _, err := DecodeAs[MealFinished]([]byte(`{"pet_tag":"p","thing":"b1"}`), DecodeOptions{AllowUnknown: true}); err == nil {
		t.Error("DecodeAs of a payload without grams_eaten accepted; want it missing")
	}
	if _, err := DecodeAs[MealFinished]([]byte(payload), DecodeOptions{}); err == nil {
		t.Error("DecodeAs with unknown keys accepted without AllowUnknown")
	}
}

// Every data type round-trips: Encode writes what Decode reads back to
// the same value, with every field of its type, and optional fields are
// exactly those with omitempty or omitzero.
func TestDataTypesRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	values := []Data{
		MealFinished{GramsEaten: 1.5, DurationS: 30, StartedAt: at, PetTag: "t"},
		Refilled{GramsAdded: 100, LevelG: 300},
		FoodLow{LevelG: 40, ThresholdG: 50},
		Empty{LevelG: float(0.5)},
		DeviceFault{Code: NumericFault(4), Detail: "ring"},
		TelemetryDropped{FromSeq: 1, ToSeq: 2, Count: 2, From: at, To: at, Reason: "ttl"},
		CounterReset{OldEpoch: 1, NewEpoch: 2, LastSeq: 3, FirstSeq: 1},
	}
	var types []string
	for _, v := range values {
		types = append(types, v.EventType())
		b, err := Encode(v)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", v, err)
		}
		back, err := Decode(v.EventType(), b, evOpts)
		if err != nil || !reflect.DeepEqual(back, v) {
			t.Errorf("Decode(Encode(%#v)) = %#v, %v", v, back, err)
		}
	}
	for _, typ := range EventTypes {
		if d, ok := DataOf(typ); !ok || d.EventType() != typ {
			t.Errorf("DataOf(%s) = %#v, %t; want its zero data", typ, d, ok)
		}
	}
	if _, ok := DataOf("bowl.data_gap"); ok {
		t.Error("DataOf(bowl.data_gap) ok; want no data type for a cloud event")
	}
	if !slices.Equal(types, EventTypes) {
		t.Errorf("tested %v; want every one of EventTypes %v", types, EventTypes)
	}
	if _, err := Encode(MealFinished{GramsEaten: -1, StartedAt: at}); err == nil {
		t.Error("Encode of a negative meal succeeded; want the bound refused")
	}
}

func TestMapTimes(t *testing.T) {
	at := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	shift := func(t time.Time) time.Time { return t.Add(-time.Hour) }
	m := MapTimes(MealFinished{GramsEaten: 1, StartedAt: at}, shift).(MealFinished)
	if !m.StartedAt.Equal(at.Add(-time.Hour)) || m.GramsEaten != 1 {
		t.Errorf("MapTimes(meal) = %+v; want started_at an hour earlier", m)
	}
	d := MapTimes(TelemetryDropped{From: at, Reason: "ttl"}, shift).(TelemetryDropped)
	if !d.From.Equal(at.Add(-time.Hour)) || !d.To.IsZero() {
		t.Errorf("MapTimes(dropped) = %+v; want from shifted and the absent to left zero", d)
	}
}

// FuzzDecode: whatever the bytes, Decode of every type returns either a
// value that Encode writes and Decode reads back equal, or a *DataError
// naming the type; it never panics.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"grams_eaten":42.5,"duration_s":90,"started_at":"2026-11-29T10:58:30Z","pet_tag":"tag-7"}`,
		`{"code":"E1","detail":"x"}`, `{"code":4,"detail":"\ud800"}`, `{"level_g":1e400}`, `{"level_g":-0}`,
		`{"from_seq":1,"to_seq":2,"count":2,"reason":"ttl","from":"1970-01-01T00:00:00+02:00"}`,
		`{"old_epoch":1,"new_epoch":2,"last_seq":3,"first_seq":4,"old_epoch":5}`, `null`, `[]`, `{"a":[[[[[]]]]]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		for _, typ := range EventTypes {
			d, err := Decode(typ, []byte(data), evOpts)
			if err != nil {
				var de *DataError
				if !errors.As(err, &de) || de.Type != typ || !strings.HasPrefix(de.Field, "data") {
					t.Fatalf("Decode(%s, %q) = %v; want a *DataError of the type", typ, data, err)
				}
				continue
			}
			b, err := Encode(d)
			if err != nil {
				t.Fatalf("Encode(Decode(%s, %q) = %#v): %v", typ, data, d, err)
			}
			back, err := Decode(typ, b, evOpts)
			if err != nil || !sameData(back, d) {
				t.Fatalf("%s %q: decoded %#v, encoded %s, decoded again %#v, %v", typ, data, d, b, back, err)
			}
		}
	})
}

// sameData compares two values of a data type, times by instant (a time's
// zone does not survive Encode's UTC-or-offset form exactly).
func sameData(a, b Data) bool {
	ja, _ := json.Marshal(MapTimes(a, func(t time.Time) time.Time { return t.UTC() }))
	jb, _ := json.Marshal(MapTimes(b, func(t time.Time) time.Time { return t.UTC() }))
	return string(ja) == string(jb)
}
