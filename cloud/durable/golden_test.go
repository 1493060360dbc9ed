package durable

import (
	"strings"
	"testing"

	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
)

// Every golden batch of edge/wire/testdata goes through Handle as the
// codec says: an accepted one is taken in whole (or refused whole when
// its things are not one gateway's), a refused one is a malformed dead
// letter; none is retried.
func TestGoldenBatches(t *testing.T) {
	golden, err := batch.LoadGolden("../../edge/wire/testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range golden {
		t.Run(g.Name, func(t *testing.T) {
			r := newRig(t, nil)
			gw, want := "gw-1", ReasonMalformed
			if g.Batch != nil {
				want = ""
				if len(g.Batch.Things) > 0 {
					gw, _, _ = strings.Cut(g.Batch.Things[0].Thing, string(wire.ThingSeparator))
				}
				for _, s := range g.Batch.Things {
					r.devs.things[s.Thing] = tenant
					if !ownedBy(s.Thing, gw) {
						want = ReasonForeignThing
					}
				}
			}
			if res := r.handle(t, r.c, r.record(t, tenant, gw, t0, g.Payload)); len(res.BatchItemFailures) != 0 {
				t.Fatalf("failures = %v; want none", res.BatchItemFailures)
			}
			switch {
			case want == "" && r.obs.samples != g.Batch.Samples():
				t.Errorf("samples = %d; want %d (rejected %v)", r.obs.samples, g.Batch.Samples(), r.obs.rejected)
			case want != "" && r.obs.rejected[want] != 1:
				t.Errorf("rejected = %v; want one %s", r.obs.rejected, want)
			}
		})
	}
}
