package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// shape is what Decode knows of one data type, read once from its json
// tags: a field is optional exactly when its tag says omitempty or
// omitzero.
type shape struct {
	typ    string
	rtype  reflect.Type
	fields []shapeField
}

type shapeField struct {
	name     string
	index    int
	optional bool
	isTime   bool
	// want names the JSON value the field takes, for errors.
	want string
}

// shapes maps each device event type to its data's shape.
var shapes = buildShapes()

func buildShapes() map[string]*shape {
	m := map[string]*shape{}
	for _, d := range deviceData {
		rt := reflect.TypeOf(d)
		s := &shape{typ: d.EventType(), rtype: rt}
		for i := range rt.NumField() {
			f := rt.Field(i)
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if !f.IsExported() || name == "" || name == "-" {
				panic(fmt.Sprintf("wire: %s.%s needs a json name", rt.Name(), f.Name))
			}
			o := strings.Split(opts, ",")
			optional := slices.Contains(o, "omitempty") || slices.Contains(o, "omitzero")
			s.fields = append(s.fields, shapeField{name: name, index: i, optional: optional, isTime: f.Type == timeType, want: wantOf(f.Type)})
		}
		if _, dup := m[s.typ]; dup {
			panic("wire: two data types for " + s.typ)
		}
		m[s.typ] = s
	}
	return m
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	faultCodeType = reflect.TypeFor[FaultCode]()
)

func wantOf(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "an RFC 3339 time"
	case t == faultCodeType:
		return "a name or a whole number >= 0"
	}
	switch t.Kind() {
	case reflect.Float64:
		return "a number"
	case reflect.Uint64:
		return "a whole number >= 0"
	case reflect.String:
		return "a string"
	}
	panic("wire: no JSON description for " + t.String())
}

// decode reads data into a new value of s, strictly, then checks it.
func (s *shape) decode(data []byte, opts DecodeOptions) (Data, error) {
	fail := func(field, problem string) (Data, error) {
		return nil, &DataError{Type: s.typ, Field: field, Problem: problem}
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
		data = []byte(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		if t := bytes.TrimSpace(data); t[0] != '{' {
			return fail("data", "is not a JSON object")
		}
		return fail("data", "is not a valid JSON object: "+err.Error())
	}
	if !opts.AllowUnknown {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !slices.ContainsFunc(s.fields, func(f shapeField) bool { return f.name == k }) {
				return fail("data", fmt.Sprintf("unknown field %q", k))
			}
		}
	}
	v := reflect.New(s.rtype).Elem()
	for _, f := range s.fields {
		raw, ok := obj[f.name]
		switch {
		case !ok && f.optional:
			continue
		case !ok:
			return fail("data", fmt.Sprintf("missing field %q (want %s)", f.name, f.want))
		case string(bytes.TrimSpace(raw)) == "null":
			return fail("data."+f.name, "is null; want "+f.want)
		}
		if err := json.Unmarshal(raw, v.Field(f.index).Addr().Interface()); err != nil {
			return fail("data."+f.name, fmt.Sprintf("is %s; want %s", jsonKind(raw), f.want))
		}
	}
	d := v.Interface().(Data)
	if err := Check(d, opts); err != nil {
		return nil, err
	}
	return d, nil
}

// jsonKind describes a JSON value by its kind; a number short enough
// is quoted.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch c := raw[0]; {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case len(raw) <= 32:
		return "the number " + string(raw)
	}
	return "the number " + string(raw[:32]) + "..."
}

// reflectCopy returns an addressable copy of d's struct value.
func reflectCopy(d Data) reflect.Value {
	v := reflect.New(reflect.TypeOf(d)).Elem()
	v.Set(reflect.ValueOf(d))
	return v
}
