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

// decodeStrict decodes the JSON body into v, a pointer to a struct with
// json tags, refusing what encoding/json would let through: a key that is
// not a field (also one that differs from a field only in case, which
// encoding/json matches anyway), a key given twice in one object (where
// encoding/json keeps the last), and data after the value. Its errors name
// the field and what is wrong in the client's terms, never a Go type
// (docs/commerce.md, "Request bodies").
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := checkValue(dec, reflect.TypeOf(v), ""); err != nil {
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

// checkValue reads one JSON value from dec and checks its object keys
// against t (nil: any value, only duplicates are checked).
func checkValue(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: its type is checked by the decode that follows
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := checkValue(dec, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case '{':
		fields := map[string]reflect.Type{}
		known := t != nil && t.Kind() == reflect.Struct
		if known {
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
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return syntaxError(err)
			}
			key, _ := kt.(string)
			at := joinPath(path, key)
			if seen[key] {
				return fmt.Errorf("field %s: given more than once", at)
			}
			seen[key] = true
			ft := elem
			if known {
				var ok bool
				if ft, ok = fields[key]; !ok {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return fmt.Errorf("field %s: unknown; keys are case-sensitive, did you mean %q?", at, name)
						}
					}
					return fmt.Errorf("field %s: unknown", at)
				}
			}
			if err := checkValue(dec, ft, at); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ] or }
		return syntaxError(err)
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
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
