package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// maxDepth bounds how deeply a body's arrays and objects may nest. The
// deepest body the API reads is a webhook's data inside the webhook (two
// levels), an order's items (three); 32 leaves room and bounds the work of
// a hostile body to its length (docs/commerce.md, "Request bodies").
const maxDepth = 32

// decodeStrict decodes the JSON body into v, a pointer to a struct with
// json tags, refusing what encoding/json would let through: a key that is
// not a field (also one that differs from a field only in case, which
// encoding/json matches anyway), a key given twice in one object (where
// encoding/json keeps the last), nesting deeper than maxDepth, and data
// after the value. Its errors name the field and what is wrong in the
// client's terms, never a Go type (docs/commerce.md, "Request bodies").
//
// Its work and memory are linear in len(body): the check walks the tokens
// once, keeping only the path of the value it is in, and spells that path
// out only for an error.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	c := checker{dec: dec}
	if err := c.value(reflect.TypeOf(v)); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("body: more data after the JSON object")
	}
	dec = json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeDecodeError(err)
	}
	return nil
}

// checker walks one JSON value, checking its object keys against a Go type.
type checker struct {
	dec  *json.Decoder
	path []step // where the walk is, outermost first; len(path) is the depth
}

// step is one element of a path: an object key, or an array index when
// key is "" and index >= 0.
type step struct {
	key   string
	index int
}

// at spells the current path, with key appended when it is not "":
// "items[0].qty". Only errors call it.
func (c *checker) at(key string) string {
	var b strings.Builder
	for _, s := range c.path {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	if key != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(key)
	}
	return b.String()
}

// value reads one JSON value and checks its object keys against t (nil:
// any value, only duplicates are checked).
func (c *checker) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := c.dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: its type is checked by the decode that follows
	}
	if len(c.path) >= maxDepth {
		return fmt.Errorf("body: nested more than %d levels deep (at byte %d)", maxDepth, c.dec.InputOffset())
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; c.dec.More(); i++ {
			c.path = append(c.path, step{index: i})
			err := c.value(elem)
			c.path = c.path[:len(c.path)-1]
			if err != nil {
				return err
			}
		}
	case '{':
		if err := c.object(t); err != nil {
			return err
		}
	}
	if _, err := c.dec.Token(); err != nil { // the closing ] or }
		return syntaxError(err)
	}
	return nil
}

// object checks the keys of an object whose { was just read.
func (c *checker) object(t reflect.Type) error {
	var fields map[string]reflect.Type
	known := t != nil && t.Kind() == reflect.Struct
	if known {
		fields = make(map[string]reflect.Type, t.NumField())
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.IsExported() && name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
	}
	var elem reflect.Type
	if t != nil && t.Kind() == reflect.Map {
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for c.dec.More() {
		kt, err := c.dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		key, _ := kt.(string)
		if seen[key] {
			return fmt.Errorf("field %s: given more than once", c.at(key))
		}
		seen[key] = true
		ft := elem
		if known {
			var ok bool
			if ft, ok = fields[key]; !ok {
				for name := range fields {
					if strings.EqualFold(name, key) {
						return fmt.Errorf("field %s: unknown; keys are case-sensitive, did you mean %q?", c.at(key), name)
					}
				}
				return fmt.Errorf("field %s: unknown", c.at(key))
			}
		}
		c.path = append(c.path, step{key: key, index: -1})
		err = c.value(ft)
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

func syntaxError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("body: not valid JSON at byte %d", se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("body: not valid JSON (it ends early)")
	}
	return errors.New("body: not valid JSON")
}

// describeDecodeError turns an encoding/json error into one without Go type
// names.
func describeDecodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %s: want %s, got %s", te.Field, jsonKind(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return syntaxError(err)
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return fmt.Errorf("field %s: unknown", strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`))
	}
	return errors.New("body: does not match the expected JSON shape")
}

// jsonKind names t as JSON.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	default:
		return "an object"
	}
}
