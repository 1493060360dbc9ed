package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
)

// fieldKind is the JSON shape a data field must have.
type fieldKind int

const (
	number    fieldKind = iota // any finite number
	nonNeg                     // a number >= 0
	counter                    // a whole number >= 0
	text                       // free text, possibly empty: wire.CheckText, wire.MaxDetailLen
	nonEmpty                   // a non-empty string
	timestamp                  // an RFC 3339 time, not in the future
	code                       // an ident or a whole number >= 0
	ident                      // an identifier: wire.CheckIdent, wire.MaxCodeLen
	petTag                     // "" or a tag: wire.CheckTag, wire.MaxPetTagLen
)

type field struct {
	name     string
	kind     fieldKind
	optional bool
}

// schema is the data schema of one device event type: the fields it may
// have; unknown fields are refused, so a typo never reaches the chain.
type schema []field

// schemas holds every event type a device may send: the bowl.* types of
// docs/contract.md ("Event catalog") but bowl.data_gap, which the cloud
// raises.
var schemas = map[string]schema{
	catalog.TypeMealFinished: {{"grams_eaten", nonNeg, false}, {"duration_s", nonNeg, false}, {"started_at", timestamp, false}, {"pet_tag", petTag, false}},
	catalog.TypeRefilled:     {{"grams_added", nonNeg, false}, {"level_g", number, false}},
	catalog.TypeFoodLow:      {{"level_g", number, false}, {"threshold_g", number, false}},
	catalog.TypeEmpty:        {{"level_g", number, true}},
	// The edge agent sends the firmware's numeric fault code (frame.FaultCode);
	// a named code is accepted too.
	catalog.TypeDeviceFault: {{"code", code, false}, {"detail", text, false}},
	// The MCU's boot epochs and the counter's last seq of the old epoch and
	// first of the new (edge/agent; firmware-bridge/PROTOCOL.md).
	catalog.TypeCounterReset:     {{"old_epoch", counter, false}, {"new_epoch", counter, false}, {"last_seq", counter, false}, {"first_seq", counter, false}},
	catalog.TypeTelemetryDropped: {{"from_seq", counter, false}, {"to_seq", counter, false}, {"count", counter, false}, {"from", timestamp, true}, {"to", timestamp, true}, {"reason", ident, false}},
}

// checkCatalog verifies that every type ingest emits is declared in the
// catalog as produced by ingest, so the two cannot drift apart silently.
func checkCatalog() error {
	var emits []string
	for _, p := range catalog.Bowline().Producers {
		if p.Name == catalog.ProducerIngest {
			emits = p.Emits
		}
	}
	for typ := range schemas {
		if !slices.Contains(emits, typ) {
			return fmt.Errorf("ingest: device event type %q is not declared in the catalog as produced by %q", typ, catalog.ProducerIngest)
		}
	}
	if !slices.Contains(emits, catalog.TypeDataGap) {
		return fmt.Errorf("ingest: %q is not declared in the catalog as produced by %q", catalog.TypeDataGap, catalog.ProducerIngest)
	}
	return nil
}

func (s schema) check(data json.RawMessage, now time.Time, skew time.Duration) error {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return fmt.Errorf("data is not a JSON object")
	}
	for name := range obj {
		if !slices.ContainsFunc(s, func(f field) bool { return f.name == name }) {
			return fmt.Errorf("data: unknown field %q", name)
		}
	}
	for _, f := range s {
		v, ok := obj[f.name]
		if !ok {
			if f.optional {
				continue
			}
			return fmt.Errorf("data: missing field %q", f.name)
		}
		if err := f.check(v, now, skew); err != nil {
			return fmt.Errorf("data.%s: %w", f.name, err)
		}
	}
	return nil
}

func (f field) check(v json.RawMessage, now time.Time, skew time.Duration) error {
	switch f.kind {
	case code:
		var s string
		if json.Unmarshal(v, &s) == nil {
			return field{f.name, ident, f.optional}.check(v, now, skew)
		}
		if err := (field{f.name, counter, f.optional}).check(v, now, skew); err != nil {
			return fmt.Errorf("%s is neither a non-empty string nor a whole number >= 0", v)
		}
	case number, nonNeg, counter:
		var n float64
		if err := json.Unmarshal(v, &n); err != nil {
			return fmt.Errorf("%s is not a number", v)
		}
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return fmt.Errorf("%s is not finite", v)
		}
		if f.kind != number && n < 0 {
			return fmt.Errorf("%s is negative", v)
		}
		if f.kind == counter && (n != math.Trunc(n) || n > 1<<53) {
			return fmt.Errorf("%s is not a whole number", v)
		}
	case text, nonEmpty, timestamp, ident, petTag:
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("%s is not a string", v)
		}
		// The bounds of docs/contract.md ("Field bounds"): nothing longer
		// reaches a DynamoDB key or an SQS body.
		switch f.kind {
		case text:
			return bound(wire.CheckText(f.name, s, wire.MaxDetailLen))
		case ident:
			return bound(wire.CheckIdent(f.name, s, wire.MaxCodeLen, false))
		case petTag:
			return bound(wire.CheckTag(f.name, s))
		}
		if f.kind == nonEmpty && s == "" {
			return fmt.Errorf("is empty")
		}
		if f.kind == timestamp {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return fmt.Errorf("%q is not an RFC 3339 time", s)
			}
			if t.After(now.Add(skew)) {
				return fmt.Errorf("%q is in the future", s)
			}
		}
	}
	return nil
}

// bound drops the field name from a *wire.FieldError: the caller's
// "data.<field>: " prefix names it.
func bound(err error) error {
	var fe *wire.FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("%s (%s)", fe.Problem, fe.Rule)
	}
	return err
}
