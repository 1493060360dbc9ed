// Package completeness states, per bowl and UTC day on the bowl's clock,
// what became of its samples: assigned a seq by the gateway (acknowledged
// to the MCU), durable in the telemetry stream, dropped at the gateway and
// why, refused by the MCU's full ring, missing, and duplicates collapsed
// (docs/completeness.md).
//
// It adds no write to the data path: the counts and seqs come from the
// telemetry consumer's rollup rows (durable.ReadDay), the drops and ring
// refusals from the tenant's event log (bowl.telemetry_dropped,
// bowl.device_fault code 4).
package completeness

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/engine"
)

// FaultRingOverflow is the MCU's fault code for readings refused with its
// ring full (firmware-bridge/PROTOCOL.md).
const FaultRingOverflow = 4

// refusedRE reads the count out of a ring overflow fault's detail,
// "<n> readings refused: ring full".
var refusedRE = regexp.MustCompile(`^(\d+) readings? refused`)

// DB is the part of DynamoDB Day reads: the rollups (Query) and the
// event log (an engine.Log, which also has GetItem).
type DB interface {
	engine.LogDB
}

// Tables names the tables Day reads.
type Tables struct {
	// Telemetry is resources.Names.TelemetryTable (the rollups).
	Telemetry string
	// Events is resources.Names.EventsTable (the tenant's log).
	Events string
}

// Day states thing's (of tenant) completeness on day, reading its rollup
// rows of the day (one Query) and tenant's event log (every event row:
// the log has no index by thing or time, so this costs the tenant's whole
// log in read units; an operator's tool, not a page's).
func Day(ctx context.Context, db DB, tables Tables, tenant, thing string, day time.Time) (durable.Statement, error) {
	t, err := durable.ReadDay(ctx, db, tables.Telemetry, thing, day)
	if err != nil {
		return durable.Statement{}, err
	}
	envs, err := readLog(ctx, db, tables.Events, tenant)
	if err != nil {
		return durable.Statement{}, err
	}
	drops, refused := FromEvents(envs, thing, day)
	return durable.Account(thing, day, t, drops, refused), nil
}

// FromEvents returns thing's drops reported on day (bowl clock: a drop's
// last sample time) and the readings its MCU refused that day (the sum of
// its ring overflow faults' counts, by device_at).
func FromEvents(envs []engine.Envelope, thing string, day time.Time) ([]durable.Drop, int64) {
	start := day.UTC().Truncate(24 * time.Hour)
	inDay := func(t time.Time) bool { return !t.Before(start) && t.Before(start.Add(24*time.Hour)) }
	var drops []durable.Drop
	var refused int64
	for _, e := range envs {
		switch e.Type {
		case catalog.TypeTelemetryDropped:
			d, err := catalog.Decode[catalog.TelemetryDropped](e)
			at := d.To
			if at.IsZero() {
				at = d.From
			}
			if err != nil || d.Thing != thing || !inDay(at) {
				continue
			}
			drops = append(drops, durable.Drop{FromSeq: d.FromSeq, ToSeq: d.ToSeq, Reason: d.Reason})
		case catalog.TypeDeviceFault:
			d, err := catalog.Decode[catalog.DeviceFault](e)
			if err != nil || d.Thing != thing || d.Code.IsName() || d.Code.Number != FaultRingOverflow || !inDay(d.DeviceAt) {
				continue
			}
			if m := refusedRE.FindStringSubmatch(d.Detail); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				refused += n
			}
		}
	}
	return drops, refused
}

// readLog reads every event of tenant, oldest first (eventually
// consistent: an operator's day that ended). Rows that cannot be decoded
// are skipped.
func readLog(ctx context.Context, db DB, table, tenant string) ([]engine.Envelope, error) {
	var out []engine.Envelope
	for env, err := range engine.NewLog(db, table).After(ctx, tenant, 0, engine.ReadOptions{Eventual: true}) {
		var row *engine.RowError
		switch {
		case errors.As(err, &row) && !row.KeyMismatch():
			continue
		case err != nil && row == nil:
			return nil, err
		}
		out = append(out, env)
	}
	return out, nil
}
