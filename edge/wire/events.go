package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// The data of each device event type: one Go type per Type constant. The
// json tags are the contract (docs/contract.md, "Event catalog"); a field
// whose tag says omitempty or omitzero is optional, every other field is
// required. Producers (edge/detect, edge/agent, edge/outbox) build these
// values, ingest checks what arrives with Decode, and subscribers read a
// device event's payload with DecodeAs.

// MealFinished is the data of bowl.meal_finished (edge/detect).
type MealFinished struct {
	// GramsEaten is the food the meal took from the bowl (>= 0).
	GramsEaten float64 `json:"grams_eaten"`
	// DurationS is the meal's length in seconds (>= 0).
	DurationS float64 `json:"duration_s"`
	// StartedAt is when the meal began; never after the receipt.
	StartedAt time.Time `json:"started_at"`
	// PetTag is the tag seen most during the meal, "" for an untagged
	// pet (CheckTag, MaxPetTagLen).
	PetTag string `json:"pet_tag"`
}

// Refilled is the data of bowl.refilled (edge/detect).
type Refilled struct {
	// GramsAdded is the food added (>= 0).
	GramsAdded float64 `json:"grams_added"`
	// LevelG is the bowl's level after the refill (any finite number: a
	// load cell that drifted may read below zero).
	LevelG float64 `json:"level_g"`
}

// FoodLow is the data of bowl.food_low (edge/detect).
type FoodLow struct {
	LevelG     float64 `json:"level_g"`
	ThresholdG float64 `json:"threshold_g"`
}

// Empty is the data of bowl.empty (edge/detect). The original design gave
// it no fields; edge/detect has always sent level_g, and the cloud
// accepts it absent (docs/contract.md, "Departures").
type Empty struct {
	LevelG *float64 `json:"level_g,omitempty"`
}

// DeviceFault is the data of bowl.device_fault (edge/agent, from the
// firmware's fault frame).
type DeviceFault struct {
	Code FaultCode `json:"code"`
	// Detail is the firmware's text, cleaned by the agent (CheckText,
	// MaxDetailLen); may be empty.
	Detail string `json:"detail"`
}

// TelemetryDropped is the data of bowl.telemetry_dropped (edge/outbox):
// the thing's telemetry seqs FromSeq..ToSeq, Count of them still stored,
// were removed unsent, the first read at From and the last at To.
type TelemetryDropped struct {
	FromSeq uint64 `json:"from_seq"`
	ToSeq   uint64 `json:"to_seq"`
	Count   uint64 `json:"count"`
	// From and To are optional: the outbox always sends them; the cloud
	// takes a report without them.
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	// Reason is why: "disk_cap" or "ttl" (CheckIdent, MaxReasonLen).
	Reason string `json:"reason"`
}

// CounterReset is the data of bowl.counter_reset (edge/agent): the MCU's
// boot epochs, and the counter's last seq of the old epoch and first of
// the new (firmware-bridge/PROTOCOL.md, docs/clock.md).
type CounterReset struct {
	OldEpoch uint64 `json:"old_epoch"`
	NewEpoch uint64 `json:"new_epoch"`
	LastSeq  uint64 `json:"last_seq"`
	FirstSeq uint64 `json:"first_seq"`
}

// deviceData lists the data type of every event type a gateway publishes;
// EventTypes and Decode are built from it. Adding a device event type is
// one Type constant, one type above and one entry here.
var deviceData = []Data{MealFinished{}, Refilled{}, FoodLow{}, Empty{}, DeviceFault{}, TelemetryDropped{}, CounterReset{}}

// Data is the data object of one device event type. Only the types of
// this package implement it.
type Data interface {
	// EventType is the event type whose data this is (a Type constant).
	EventType() string
	// check reports the first value that breaks the type's bounds.
	check(c *checker)
}

func (MealFinished) EventType() string     { return TypeMealFinished }
func (Refilled) EventType() string         { return TypeRefilled }
func (FoodLow) EventType() string          { return TypeFoodLow }
func (Empty) EventType() string            { return TypeEmpty }
func (DeviceFault) EventType() string      { return TypeDeviceFault }
func (TelemetryDropped) EventType() string { return TypeTelemetryDropped }
func (CounterReset) EventType() string     { return TypeCounterReset }

func (d MealFinished) check(c *checker) {
	c.nonNeg("grams_eaten", d.GramsEaten)
	c.nonNeg("duration_s", d.DurationS)
	c.notFuture("started_at", d.StartedAt)
	c.field("pet_tag", CheckTag("pet_tag", d.PetTag))
}

func (d Refilled) check(c *checker) {
	c.nonNeg("grams_added", d.GramsAdded)
	c.finite("level_g", d.LevelG)
}

func (d FoodLow) check(c *checker) {
	c.finite("level_g", d.LevelG)
	c.finite("threshold_g", d.ThresholdG)
}

func (d Empty) check(c *checker) {
	if d.LevelG != nil {
		c.finite("level_g", *d.LevelG)
	}
}

func (d DeviceFault) check(c *checker) {
	if d.Code.named {
		c.field("code", CheckIdent("code", d.Code.Name, MaxCodeLen, false))
	} else {
		c.counter("code", d.Code.Number)
	}
	c.field("detail", CheckText("detail", d.Detail, MaxDetailLen))
}

func (d TelemetryDropped) check(c *checker) {
	c.counter("from_seq", d.FromSeq)
	c.counter("to_seq", d.ToSeq)
	c.counter("count", d.Count)
	c.notFuture("from", d.From)
	c.notFuture("to", d.To)
	c.field("reason", CheckIdent("reason", d.Reason, MaxReasonLen, false))
}

func (d CounterReset) check(c *checker) {
	c.counter("old_epoch", d.OldEpoch)
	c.counter("new_epoch", d.NewEpoch)
	c.counter("last_seq", d.LastSeq)
	c.counter("first_seq", d.FirstSeq)
}

// MaxCounter bounds every whole-number field (seqs, epochs, counts, a
// numeric fault code): 2^53, the largest integer a float64 holds exactly,
// so the value survives the engine payload's JSON numbers unchanged.
const MaxCounter = 1 << 53

// FaultCode is bowl.device_fault's code: the firmware's number (what the
// agent sends: frame.FaultCode, 0 to MaxCounter) or a name (CheckIdent,
// MaxCodeLen). On the wire it is a JSON number or a JSON string.
type FaultCode struct {
	// Number is the numeric code; 0 for a named one.
	Number uint64
	// Name is the named code; "" for a numeric one.
	Name  string
	named bool
}

// NumericFault is the fault code n.
func NumericFault(n uint64) FaultCode { return FaultCode{Number: n} }

// NamedFault is the fault code name.
func NamedFault(name string) FaultCode { return FaultCode{Name: name, named: true} }

// IsName reports whether the code is a name rather than a number.
func (c FaultCode) IsName() bool { return c.named }

func (c FaultCode) String() string {
	if c.named {
		return c.Name
	}
	return strconv.FormatUint(c.Number, 10)
}

// MarshalJSON writes a number or a string.
func (c FaultCode) MarshalJSON() ([]byte, error) {
	if c.named {
		return json.Marshal(c.Name)
	}
	return strconv.AppendUint(nil, c.Number, 10), nil
}

// errFaultCode is a code that is neither a string nor a whole number.
var errFaultCode = errors.New("is neither a string nor a whole number >= 0")

// UnmarshalJSON reads a string, or a number written as digits only.
func (c *FaultCode) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = NamedFault(s)
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return errFaultCode
	}
	*c = NumericFault(n)
	return nil
}

// Sentinel errors of Decode.
var (
	// ErrUnknownType is an event type no gateway publishes.
	ErrUnknownType = errors.New("not a device event type")
	// ErrInvalidData matches every *DataError.
	ErrInvalidData = errors.New("invalid device event data")
)

// DataError is device event data that Decode refuses. It names the event
// type, the field and the problem, never repeats a value (it may be
// large).
type DataError struct {
	// Type is the event type.
	Type string
	// Field is the field's path from the event message: "data.pet_tag",
	// or "data" for the object itself.
	Field string
	// Problem says what is wrong, with the rule when there is one.
	Problem string
}

func (e *DataError) Error() string { return e.Type + " " + e.Field + ": " + e.Problem }

// Is makes errors.Is(err, ErrInvalidData) true.
func (e *DataError) Is(target error) bool { return target == ErrInvalidData }

// DecodeOptions say how strictly Decode reads.
type DecodeOptions struct {
	// Now and MaxFutureSkew: a timestamp field after Now+MaxFutureSkew is
	// refused. A zero Now checks no timestamp against a clock.
	Now           time.Time
	MaxFutureSkew time.Duration
	// AllowUnknown ignores keys the type does not have, for a reader of
	// an engine payload, which carries ingest's provenance (thing,
	// device_event_id, ...) beside the data. By default they are refused,
	// so a typo never reaches the chain.
	AllowUnknown bool
}

// Decode decodes data, the data object of an event of type typ, and
// checks it: a JSON object (empty or null data is {}), no unknown key
// (unless opts.AllowUnknown), every required field present and not null,
// every value of its field's JSON type and within its bounds. A refusal
// is a *DataError naming the type and the field; a type no gateway
// publishes is ErrUnknownType. A key given twice counts once, the last
// one, as encoding/json reads it.
func Decode(typ string, data []byte, opts DecodeOptions) (Data, error) {
	s, ok := shapes[typ]
	if !ok {
		return nil, fmt.Errorf("event type %q: %w", typ, ErrUnknownType)
	}
	return s.decode(data, opts)
}

// DataOf returns the zero value of the data type of event type typ, for
// reflection over its json tags (the cloud catalog's list of fields); ok
// is false for a type no gateway publishes.
func DataOf(typ string) (d Data, ok bool) {
	s, ok := shapes[typ]
	if !ok {
		return nil, false
	}
	return reflect.Zero(s.rtype).Interface().(Data), true
}

// DecodeAs is Decode for a type known at compile time: T is one of the
// data types above (MealFinished, ...), not a pointer to one.
func DecodeAs[T Data](data []byte, opts DecodeOptions) (T, error) {
	var zero T
	d, err := Decode(zero.EventType(), data, opts)
	if err != nil {
		return zero, err
	}
	return d.(T), nil
}

// Check checks a value built in code against its type's bounds, as Decode
// does after decoding (opts.AllowUnknown does not apply).
func Check(d Data, opts DecodeOptions) error {
	c := &checker{typ: d.EventType(), opts: opts}
	d.check(c)
	return c.err
}

// Encode is the JSON data object of d, checked first: a producer sends
// nothing Decode would refuse (timestamps are not checked against a
// clock).
func Encode(d Data) (json.RawMessage, error) {
	if err := Check(d, DecodeOptions{}); err != nil {
		return nil, err
	}
	return json.Marshal(d)
}

// MapTimes returns d with f applied to each of its timestamp fields that
// is set (ingest's correction of a wrong gateway clock, docs/clock.md).
func MapTimes(d Data, f func(time.Time) time.Time) Data {
	s := shapes[d.EventType()]
	v := reflectCopy(d)
	for _, fl := range s.fields {
		if fl.isTime {
			t := v.Field(fl.index).Addr().Interface().(*time.Time)
			if !t.IsZero() {
				*t = f(*t)
			}
		}
	}
	return v.Interface().(Data)
}

// checker collects the first bound a value breaks.
type checker struct {
	typ  string
	opts DecodeOptions
	err  error
}

func (c *checker) fail(field, problem string) {
	if c.err == nil {
		c.err = &DataError{Type: c.typ, Field: "data." + field, Problem: problem}
	}
}

// field takes the *FieldError of a Check* function.
func (c *checker) field(name string, err error) {
	var fe *FieldError
	switch {
	case err == nil:
	case errors.As(err, &fe):
		c.fail(name, fmt.Sprintf("%s (%s)", fe.Problem, fe.Rule))
	default:
		c.fail(name, err.Error())
	}
}

func (c *checker) finite(field string, v float64) {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		c.fail(field, "is not a finite number")
	}
}

func (c *checker) nonNeg(field string, v float64) {
	c.finite(field, v)
	if v < 0 {
		c.fail(field, fmt.Sprintf("is %v, negative; want a number >= 0", v))
	}
}

func (c *checker) counter(field string, v uint64) {
	if v > MaxCounter {
		c.fail(field, fmt.Sprintf("is %d, more than %d (2^53)", v, uint64(MaxCounter)))
	}
}

func (c *checker) notFuture(field string, t time.Time) {
	if !c.opts.Now.IsZero() && t.After(c.opts.Now.Add(c.opts.MaxFutureSkew)) {
		c.fail(field, fmt.Sprintf("%s is in the future (more than %s after %s)", t.Format(time.RFC3339Nano), c.opts.MaxFutureSkew, c.opts.Now.Format(time.RFC3339Nano)))
	}
}
