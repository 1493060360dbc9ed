package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/edge/wire"
)

// DefaultMaxFutureSkew is Config.MaxFutureSkew's default: how far after
// receipt a device timestamp may lie.
const DefaultMaxFutureSkew = 5 * time.Minute

// CheckDeviceData checks data, the payload of a device event of type typ,
// with the decoder ingest applies to every device message (wire.Decode:
// fields, JSON types, bounds; timestamps at most DefaultMaxFutureSkew after
// now), so a tool that emits device events by hand (`bowline emit`) writes
// nothing ingest would refuse. known is false when typ is not a device
// event type.
func CheckDeviceData(typ string, data json.RawMessage, now time.Time) (known bool, err error) {
	_, err = wire.Decode(typ, data, wire.DecodeOptions{Now: now, MaxFutureSkew: DefaultMaxFutureSkew})
	if errors.Is(err, wire.ErrUnknownType) {
		return false, nil
	}
	return true, err
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
	for _, typ := range wire.EventTypes {
		if !slices.Contains(emits, typ) {
			return fmt.Errorf("ingest: device event type %q is not declared in the catalog as produced by %q", typ, catalog.ProducerIngest)
		}
	}
	if !slices.Contains(emits, catalog.TypeDataGap) {
		return fmt.Errorf("ingest: %q is not declared in the catalog as produced by %q", catalog.TypeDataGap, catalog.ProducerIngest)
	}
	return nil
}
