package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/cli"
)

// checkPayload checks an event typed by hand before it enters the
// permanent chain: the type must be in the catalog; a device event's
// payload must pass ingest's check (ingest.CheckDeviceData, edge/wire's
// decoder); any other's must have the fields of its payload type
// (catalog.PayloadType; an optional one may be left out), each decoding
// into its Go type, or, for a type without one, exactly the catalog's
// Fields. Errors are usage errors (exit 2) that
// name the field, or list the valid types.
func checkPayload(c engine.Catalog, typ string, payload json.RawMessage, now time.Time) error {
	i := slices.IndexFunc(c.Types, func(t engine.EventType) bool { return t.Name == typ })
	if i < 0 {
		names := make([]string, len(c.Types))
		for j, t := range c.Types {
			names[j] = t.Name
		}
		slices.Sort(names)
		return fmt.Errorf("%w: --type %q is not in the catalog; want one of %s", cli.ErrUsage, typ, strings.Join(names, ", "))
	}
	if known, err := ingest.CheckDeviceData(typ, payload, now); known {
		if err != nil {
			return fmt.Errorf("%w: --payload for %s: %v (ingest's rule for device events)", cli.ErrUsage, typ, err)
		}
		return nil
	}
	fields, required := c.Types[i].Fields, c.Types[i].Fields
	pt, typed := catalog.PayloadType(typ)
	if typed {
		fields, required = nil, nil
		for _, f := range catalog.FieldsOf(pt) {
			fields = append(fields, f.Name)
			if !f.Optional {
				required = append(required, f.Name)
			}
		}
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return fmt.Errorf("%w: --payload for %s is not a JSON object; want the fields %s", cli.ErrUsage, typ, strings.Join(fields, ", "))
	}
	for name := range obj {
		if !slices.Contains(fields, name) {
			return fmt.Errorf("%w: --payload for %s: unknown field %q; want the fields %s", cli.ErrUsage, typ, name, strings.Join(fields, ", "))
		}
	}
	for _, f := range required {
		if _, ok := obj[f]; !ok {
			return fmt.Errorf("%w: --payload for %s: missing field %q; want the fields %s", cli.ErrUsage, typ, f, strings.Join(fields, ", "))
		}
	}
	if typed {
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(reflect.New(pt).Interface()); err != nil {
			return fmt.Errorf("%w: --payload for %s does not decode into %v: %v", cli.ErrUsage, typ, pt, err)
		}
	}
	return nil
}
