package relay

import (
	"testing"

	"github.com/bowline-iot/bowline/engine"
)

// TestEventsPipePassesOnlyEventRowKeys: the events pipe (and its narrowing
// to subscribed types) passes an INSERT of a row keyed as an event row,
// and none of the look-alike keys a role could once write outside the
// chain (issue 22): those the Pipe's operators can tell apart are
// dropped here; the rest IAM refuses and the worker dead-letters.
func TestEventsPipePassesOnlyEventRowKeys(t *testing.T) {
	typed, err := EventsPipe.ForTypes([]string{"a.one"})
	if err != nil {
		t.Fatal(err)
	}
	ev := func(pk string) map[string]any {
		img := map[string]any{"pk": s(pk), "sk": s(engine.SeqSK(1)), "tenant": s("t1"), "id": s("01J"), "type": s("a.one")}
		return streamRecord("INSERT", map[string]any{"pk": s(pk), "sk": s(engine.SeqSK(1))}, img, nil)
	}
	for _, spec := range []PipeSpec{EventsPipe, typed} {
		p, err := Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := p.Transform(ev(engine.EventPK("t1"))); err != nil || !ok {
			t.Errorf("filters %q: event row %s passed %v (%v); want passed", spec.Filters, engine.EventPK("t1"), ok, err)
		}
		for _, pk := range []string{
			"X#EVENT", "tenant#t1#EVENT", "#EVENT", "EVENT", "TENANT#t1#event",
			"TENANT#t1#EVENTS", "TENANT#t1#EVENT#", "XTENANT#t1#EVENT", " TENANT#t1#EVENT",
			"EMIT#t1#EVENT", "SEQ#gw-1#EVENT", engine.HeadPK("t1"),
		} {
			if _, ok, err := p.Transform(ev(pk)); err != nil || ok {
				t.Errorf("filters %q: row with pk %q passed %v (%v); want dropped", spec.Filters, pk, ok, err)
			}
		}
	}
}
