package engine_test

import (
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/engine"
)

// TestIdleTenantsAreForgotten: an engine emitting for many tenants keeps
// state for at most MaxIdleTenants idle ones, and a forgotten tenant's next
// emit reads its head again and extends its chain, even while other
// tenants' committers come and go concurrently.
func TestIdleTenantsAreForgotten(t *testing.T) {
	const limit = 2
	f := newFixture(t, testCatalog(), func(c *engine.Config) { c.MaxIdleTenants = limit })
	var tenants []string
	for range 12 {
		tenants = append(tenants, newTenant(t))
	}
	emitAll := func(round int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, len(tenants)*3)
		for _, tn := range tenants {
			for i := range 3 {
				wg.Go(func() {
					_, err := f.engine.Emit(ctxFor(t, tn), "com.payment_completed", map[string]any{"round": round, "i": i})
					errs <- err
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: Emit: %v", round, err)
			}
		}
	}
	idle := func() int {
		deadline := time.Now().Add(5 * time.Second)
		for f.engine.TrackedTenants() > limit && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		return f.engine.TrackedTenants()
	}
	emitAll(1)
	if got := idle(); got > limit {
		t.Fatalf("after emitting for %d tenants the engine tracks %d; want at most %d", len(tenants), got, limit)
	}
	emitAll(2) // most tenants were forgotten: their heads are read again
	if got := idle(); got > limit {
		t.Fatalf("after the second round the engine tracks %d; want at most %d", got, limit)
	}
	for _, tn := range tenants {
		if rep := f.verify(t, tn); !rep.Intact || rep.Verified.Seq != 6 {
			t.Errorf("tenant %s: %+v; want an intact chain of 6 events", tn, rep)
		}
	}
}
