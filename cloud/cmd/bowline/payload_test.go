package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/internal/cli"
)

// A hand-typed payload of a cloud type is checked against its payload
// type: an optional field may be left out, a required one may not, and a
// value must decode into its field's type.
func TestCheckPayloadUsesThePayloadType(t *testing.T) {
	now := time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		typ, payload, wantErr string
	}{
		{catalog.TypeDataGap, `{"thing":"gw-1:a","lane":"events","from_seq":1,"to_seq":2,"missing_since":"2026-03-09T07:00:00Z"}`, ""},
		{catalog.TypeDataGap, `{"thing":"gw-1:a","lane":"telemetry","outbox":"v1","from_seq":1,"to_seq":2,"missing_since":"2026-03-09T07:00:00Z"}`, ""},
		{catalog.TypeDataGap, `{"thing":"gw-1:a","lane":"events","from_seq":1,"missing_since":"2026-03-09T07:00:00Z"}`, `missing field "to_seq"`},
		{catalog.TypeDataGap, `{"thing":"gw-1:a","lane":"events","from_seq":-1,"to_seq":2,"missing_since":"2026-03-09T07:00:00Z"}`, "from_seq"},
		{catalog.TypeAppetiteDropped, `{"pet_tag":"p1","day":"2026-03-09","grams":30,"average_g":100,"days":7}`, ""},
		{catalog.TypeAppetiteDropped, `{"pet_tag":"p1","day":"2026-03-09","grams":30,"average_g":100,"days":7.5}`, "days"},
	} {
		err := checkPayload(catalog.Bowline(), tc.typ, json.RawMessage(tc.payload), now)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("checkPayload(%s, %s) = %v; want nil", tc.typ, tc.payload, err)
		case tc.wantErr != "" && (!errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("checkPayload(%s, %s) = %v; want a usage error naming %q", tc.typ, tc.payload, err, tc.wantErr)
		}
	}
}
