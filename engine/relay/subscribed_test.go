package relay

import (
	"errors"
	"testing"
)

func streamRecord(name string, keys, newImg, oldImg map[string]any) map[string]any {
	d := map[string]any{"Keys": keys}
	if newImg != nil {
		d["NewImage"] = newImg
	}
	if oldImg != nil {
		d["OldImage"] = oldImg
	}
	return map[string]any{"eventName": name, "dynamodb": d}
}

func s(v string) map[string]any { return map[string]any{"S": v} }

// The events pipe narrowed to types passes event-row INSERTs of those types
// only, and still never a head.
func TestForTypesPassesOnlySubscribedTypes(t *testing.T) {
	spec, err := EventsPipe.ForTypes([]string{"b.two", "a.one", "a.one"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"TENANT#"}]}},"NewImage":{"pk":{"S":[{"suffix":"#EVENT"}]},"type":{"S":["a.one","b.two"]}}},"eventName":["INSERT"]}`
	if len(spec.Filters) != 1 || spec.Filters[0] != want {
		t.Fatalf("ForTypes filters = %q; want [%s]", spec.Filters, want)
	}
	p, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	ev := func(pk, typ string) map[string]any {
		img := map[string]any{"pk": s(pk), "tenant": s("t1"), "id": s("01J"), "type": s(typ)}
		return streamRecord("INSERT", map[string]any{"pk": s(pk)}, img, nil)
	}
	for _, c := range []struct {
		pk, typ string
		want    bool
	}{
		{"TENANT#t1#EVENT", "a.one", true},
		{"TENANT#t1#EVENT", "b.two", true},
		{"TENANT#t1#EVENT", "c.unread", false},
		{"TENANT#t1#HEAD", "a.one", false},
	} {
		if _, ok, err := p.Transform(ev(c.pk, c.typ)); err != nil || ok != c.want {
			t.Errorf("%s %s passed %v (%v); want %v", c.pk, c.typ, ok, err, c.want)
		}
	}
	if _, err := EventsPipe.ForTypes(nil); !errors.Is(err, ErrNothingSubscribed) {
		t.Errorf("ForTypes(nil) error = %v; want ErrNothingSubscribed", err)
	}
}

// The record-changes pipe narrowed to an entity passes every change of its
// rows (by entity attribute in either image, or by pk when a row has none)
// and none of another entity's rows, such as ingest's seq and lease rows.
func TestForEntitiesPassesOnlySubscribedRows(t *testing.T) {
	spec, err := RecordChangesPipe.ForEntities([]string{"contact"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	key := func(pk string) map[string]any { return map[string]any{"pk": s(pk), "sk": s("X")} }
	row := func(pk, entity string) map[string]any {
		m := map[string]any{"pk": s(pk)}
		if entity != "" {
			m["entity"] = s(entity)
		}
		return m
	}
	for _, c := range []struct {
		name string
		rec  map[string]any
		want bool
	}{
		{"contact insert", streamRecord("INSERT", key("CONTACT#t1"), row("CONTACT#t1", "contact"), nil), true},
		{"contact modify", streamRecord("MODIFY", key("CONTACT#t1"), row("CONTACT#t1", "contact"), row("CONTACT#t1", "contact")), true},
		{"contact remove", streamRecord("REMOVE", key("CONTACT#t1"), nil, row("CONTACT#t1", "contact")), true},
		{"entity in another case", streamRecord("MODIFY", key("X#1"), row("X#1", "Contact"), nil), true},
		{"contact row without entity", streamRecord("MODIFY", key("Contact#t1"), row("Contact#t1", ""), nil), true},
		{"seq row", streamRecord("MODIFY", key("SEQ#bowl-1"), row("SEQ#bowl-1", "ingest_seq"), row("SEQ#bowl-1", "ingest_seq")), false},
		{"lease row", streamRecord("INSERT", key("LEASE#ingest#g"), row("LEASE#ingest#g", "ingest_lease"), nil), false},
		{"intake row", streamRecord("MODIFY", key("PET#t1#tag"), row("PET#t1#tag", "intake"), nil), false},
		{"contacts is another entity", streamRecord("MODIFY", key("CONTACTS#t1"), row("CONTACTS#t1", "contacts"), nil), false},
	} {
		if _, ok, err := p.Transform(c.rec); err != nil || ok != c.want {
			t.Errorf("%s: passed %v (%v); want %v", c.name, ok, err, c.want)
		}
	}
}
