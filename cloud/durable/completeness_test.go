package durable

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"
)

// A day with a range the gateway dropped (disk cap), a hole that never
// arrived and a resend reports exact counts, from the rollup rows alone:
// seqs 1..50, [51..60 dropped], 61..100, [101..105 missing], 106..120,
// then 90..100 sent again; and 121..130 the next day, not counted.
func TestCompletenessOfADay(t *testing.T) {
	r := newRig(t, nil) // 30-minute windows, as deployed
	day := t0.Truncate(24 * time.Hour)
	send := func(from, to uint64, at time.Time) {
		r.handle(t, r.c, r.record(t, tenant, "gw-1", at, encode(t, "ob1", at, weights("gw-1:a", from, to, at))))
	}
	send(1, 50, t0)
	send(61, 100, t0.Add(20*time.Minute))
	send(106, 120, t0.Add(50*time.Minute))
	send(90, 100, t0.Add(20*time.Minute+29*time.Second)) // the resend: the same seqs at the same times
	send(121, 130, day.Add(24*time.Hour+time.Hour))      // the next day
	r.c.Flush(context.Background())

	tally, err := ReadDay(context.Background(), r.db, "telemetry_state", "gw-1:a", day)
	if err != nil {
		t.Fatal(err)
	}
	st := Account("gw-1:a", day, tally, []Drop{{FromSeq: 51, ToSeq: 60, Reason: "disk_cap"}}, 0)
	want := Statement{Thing: "gw-1:a", Day: "2026-03-02",
		Counts:   catalog.Counts{Assigned: 120, Durable: 105, Dropped: map[string]int64{"disk_cap": 10}, DroppedTotal: 10, Missing: 5, Duplicates: 11},
		Outboxes: map[string][][2]uint64{"ob1": {{1, 50}, {61, 100}, {106, 120}}}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("statement = %+v;\nwant %+v", st, want)
	}
	if st.Assigned != st.Durable+st.DroppedTotal+st.Missing {
		t.Errorf("assigned %d != durable %d + dropped %d + missing %d", st.Assigned, st.Durable, st.DroppedTotal, st.Missing)
	}
	next, err := ReadDay(context.Background(), r.db, "telemetry_state", "gw-1:a", day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if next.Durable != 10 || next.Dups != 0 {
		t.Errorf("next day: durable %d, dups %d; want 10, 0", next.Durable, next.Dups)
	}
	if st.Digest() == Account("gw-1:a", day, tally, nil, 0).Digest() {
		t.Error("digest ignores the drops")
	}
}

// Drops outside the durable range (the day's last samples dropped by TTL)
// add to what was assigned; several reasons are kept apart.
func TestAccountDropsOutsideTheRange(t *testing.T) {
	tally := DayTally{Durable: 10, Seqs: map[string][][2]uint64{"ob1": {{11, 20}}}}
	st := Account("b", t0, tally, []Drop{{1, 10, "ttl"}, {21, 25, "disk_cap"}}, 0)
	if st.Assigned != 25 || st.Missing != 0 || st.Dropped["ttl"] != 10 || st.Dropped["disk_cap"] != 5 {
		t.Fatalf("statement = %+v; want assigned 25, missing 0, ttl 10, disk_cap 5", st)
	}
}
