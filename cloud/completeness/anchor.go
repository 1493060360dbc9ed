package completeness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/engine"
)

// Emitter is the engine's Emit; *engine.Engine is one.
type Emitter interface {
	EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error)
}

var _ Emitter = (*engine.Engine)(nil)

// IdempotencyKey is the key a tenant's day is stated under: once per
// (tenant, day), however often the job runs.
func IdempotencyKey(tenant string, day time.Time) string {
	return "completeness/" + tenant + "/" + day.UTC().Format(time.DateOnly)
}

// State computes tenant's day, audit.completeness_stated's payload: every thing in things and every thing its
// event log names (a bowl event's payload "thing").
func State(ctx context.Context, db DB, tables Tables, tenant string, things []string, day time.Time) (catalog.CompletenessStated, error) {
	envs, err := readLog(ctx, db, tables.Events, tenant)
	if err != nil {
		return catalog.CompletenessStated{}, err
	}
	all := slices.Clone(things)
	for _, e := range envs {
		if th, ok := e.Payload["thing"].(string); ok && th != "" {
			all = append(all, th)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	st := catalog.CompletenessStated{Day: day.UTC().Format(time.DateOnly), Things: map[string]catalog.ThingCounts{}}
	var lines strings.Builder
	for _, th := range all {
		t, err := durable.ReadDay(ctx, db, tables.Telemetry, th, day)
		if err != nil {
			return catalog.CompletenessStated{}, err
		}
		drops, refused := FromEvents(envs, th, day)
		s := durable.Account(th, day, t, drops, refused)
		c := catalog.ThingCounts{Assigned: s.Assigned, Durable: s.Durable, Dropped: s.Dropped, DroppedTotal: s.DroppedTotal, Missing: s.Missing,
			Duplicates: s.Duplicates, RingRefused: s.RingRefused, Partial: s.Partial, Digest: s.Digest()}
		st.Things[th] = c
		fmt.Fprintf(&lines, "%s:%s\n", th, c.Digest)
	}
	sum := sha256.Sum256([]byte(lines.String()))
	st.Digest = hex.EncodeToString(sum[:])
	return st, nil
}

// Anchor states tenant's day and emits it as audit.completeness_stated
// through em, once per (tenant, day): a repeat returns the first event's
// envelope and an error wrapping engine.ErrDuplicate, and writes nothing.
func Anchor(ctx context.Context, db DB, tables Tables, em Emitter, tenant string, things []string, day time.Time) (catalog.CompletenessStated, engine.Envelope, error) {
	st, err := State(ctx, db, tables, tenant, things, day)
	if err != nil {
		return catalog.CompletenessStated{}, engine.Envelope{}, err
	}
	ectx := engine.WithActor(engine.WithTenant(ctx, tenant), catalog.ProducerCompleteness)
	env, err := em.EmitEvent(ectx, engine.Event{Type: catalog.TypeCompletenessStated, Payload: st, IdempotencyKey: IdempotencyKey(tenant, day)})
	if err != nil && !errors.Is(err, engine.ErrDuplicate) {
		return st, env, fmt.Errorf("anchor completeness of tenant %q for %s: %w", tenant, st.Day, err)
	}
	return st, env, err
}
