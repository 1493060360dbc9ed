package testkit

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// ValidateKeeps calls cfg's Validate and fails t if that changed cfg: a
// Config's Validate only checks, and its constructor fills the defaults
// before it (docs/README.md, "Conventions"). P is *C, so Validate may have
// a value or a pointer receiver. It returns Validate's error for the caller
// to check.
//
// The comparison is shallow where sharing makes it so: a pointer, map,
// slice, channel or func field must keep its identity (a func is compared
// by its code pointer), other fields their value, recursively through
// structs and arrays. That catches a default filled into a zero field,
// which is the mistake it guards against.
func ValidateKeeps[C any, P interface {
	*C
	Validate() error
}](t testing.TB, cfg C) error {
	t.Helper()
	before := cfg
	err := P(&cfg).Validate()
	if path, ok := same(reflect.ValueOf(&before).Elem(), reflect.ValueOf(&cfg).Elem(), ""); !ok {
		t.Errorf("%T.Validate() changed %s; want it to leave its receiver alone (fill defaults in setDefaults)", cfg, cmp.Or(strings.TrimPrefix(path, "."), "it"))
	}
	return err
}

// same reports whether a and b (of one type) are alike as ValidateKeeps
// means it, and if not, the path of the first difference.
func same(a, b reflect.Value, path string) (string, bool) {
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if p, ok := same(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); !ok {
				return p, false
			}
		}
		return "", true
	case reflect.Array:
		for i := range a.Len() {
			if p, ok := same(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return path, a.IsNil() == b.IsNil()
		}
		if a.Elem().Type() != b.Elem().Type() {
			return path, false
		}
		return same(a.Elem(), b.Elem(), path)
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return path, a.Pointer() == b.Pointer()
	case reflect.Slice:
		return path, a.Pointer() == b.Pointer() && a.Len() == b.Len()
	case reflect.Bool:
		return path, a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return path, a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return path, a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return path, a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return path, a.Complex() == b.Complex()
	case reflect.String:
		return path, a.String() == b.String()
	}
	return path, false
}
