package catalog

import (
	"reflect"
	"strings"
	"time"
)

// Field is one JSON field of a payload type, as its json tag names it.
type Field struct {
	// Name is the JSON name.
	Name string
	// Optional is true for a field tagged omitempty or omitzero: it may be
	// absent from a payload.
	Optional bool
	// Each holds the fields of the struct a list or map field holds per
	// element (an order line, a bowl's counts); Map tells which.
	Each []Field
	Map  bool
}

// FieldsOf returns the JSON fields of payload type t (a struct, or a
// pointer to one) in declaration order, as encoding/json names them:
// exported fields only, the tag's name else the Go name, "-" skipped,
// untagged embedded structs flattened. It panics when t is not a struct:
// a payload is a JSON object.
func FieldsOf(t reflect.Type) []Field {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		panic("catalog.FieldsOf: " + t.String() + " is not a struct")
	}
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, hasTag := sf.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			if et := deref(sf.Type); et.Kind() == reflect.Struct {
				out = append(out, FieldsOf(et)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if !hasTag || name == "" {
			name = sf.Name
		}
		f := Field{Name: name, Optional: hasOpt(opts, "omitempty") || hasOpt(opts, "omitzero")}
		switch ft := deref(sf.Type); ft.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			if et := deref(ft.Elem()); et.Kind() == reflect.Struct && et != reflect.TypeFor[time.Time]() {
				f.Each, f.Map = FieldsOf(et), ft.Kind() == reflect.Map
			}
		}
		out = append(out, f)
	}
	return out
}

// FieldNames returns the names of fields, for engine.EventType.Fields.
func FieldNames(fields []Field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}
