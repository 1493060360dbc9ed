package outbox

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/bowline-iot/bowline/edge/wire"
)

func TestIDIsCreatedKeptAndValid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	o := openTest(t, Config{Path: path})
	id := o.ID()
	if !wire.ValidName(id) || len(id) > wire.MaxOutboxIDLen {
		t.Fatalf("ID() = %q; want a wire.ValidName of at most %d bytes", id, wire.MaxOutboxIDLen)
	}
	o.Close()
	if again := openTest(t, Config{Path: path}); again.ID() != id {
		t.Fatalf("ID after reopen = %q; want %q", again.ID(), id)
	}
	if other := openTest(t, Config{}); other.ID() == id {
		t.Fatalf("two new outboxes share id %q; want each its own", id)
	}
}

func TestIDSurvivesRecover(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	o := openTest(t, Config{Path: path})
	if err := o.Append(ctx, samples("bowl-a", 5, t0), nil); err != nil {
		t.Fatal(err)
	}
	id := o.ID()
	o.Close()
	if _, err := Recover(path, testLogger(t)); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	r := openTest(t, Config{Path: path})
	if r.ID() != id {
		t.Fatalf("ID after Recover = %q; want %q (the records keep their seqs, so they keep their outbox)", r.ID(), id)
	}
	recs, _ := r.Telemetry(ctx, "bowl-a", 0, 0, 100)
	if len(recs) != 5 || recs[0].Seq != 1 {
		t.Fatalf("telemetry after Recover = %d records from seq %d; want 5 from 1", len(recs), recs[0].Seq)
	}
}

// A file written before instance ids gets one on open; its seqs continue.
func TestFileWithoutIDGetsOne(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	o := openTest(t, Config{Path: path})
	if err := o.Append(ctx, samples("bowl-a", 3, t0), nil); err != nil {
		t.Fatal(err)
	}
	o.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyID) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	o = openTest(t, Config{Path: path})
	if !wire.ValidName(o.ID()) {
		t.Fatalf("ID() = %q; want a new valid id", o.ID())
	}
	if err := o.Append(ctx, samples("bowl-a", 1, t0), nil); err != nil {
		t.Fatal(err)
	}
	recs, _ := o.Telemetry(ctx, "bowl-a", 0, 0, 100)
	if got := recs[len(recs)-1].Seq; got != 4 {
		t.Fatalf("seq after the id was added = %d; want 4 (seqs continue)", got)
	}
}

func TestAckTelemetryDeletesOnlyRangesUpToSent(t *testing.T) {
	ctx := context.Background()
	o := openTest(t, Config{})
	if err := o.Append(ctx, samples("bowl-a", 20, t0), nil); err != nil {
		t.Fatal(err)
	}
	before, _ := o.Stats()
	// 1..5 and 8..30 acknowledged, but only 1..12 sent: 1..5 and 8..12 go.
	n, err := o.AckTelemetry(ctx, o.ID(), []ThingAck{{Thing: "bowl-a", Ranges: []wire.Range{{First: 1, Last: 5}, {First: 8, Last: 30}}, SentUpTo: 12}})
	if err != nil || n != 10 {
		t.Fatalf("AckTelemetry = %d, %v; want 10, nil", n, err)
	}
	recs, _ := o.Telemetry(ctx, "bowl-a", 0, 0, 100)
	var seqs []uint64
	for _, r := range recs {
		seqs = append(seqs, r.Seq)
	}
	want := []uint64{6, 7, 13, 14, 15, 16, 17, 18, 19, 20}
	if len(seqs) != len(want) {
		t.Fatalf("left = %v; want %v", seqs, want)
	}
	for i := range want {
		if seqs[i] != want[i] {
			t.Fatalf("left = %v; want %v", seqs, want)
		}
	}
	after, _ := o.Stats()
	if after.Telemetry.Records != 10 || after.Telemetry.Bytes*2 != before.Telemetry.Bytes {
		t.Fatalf("stats after ack = %d records, %d bytes; want 10 records, %d bytes", after.Telemetry.Records, after.Telemetry.Bytes, before.Telemetry.Bytes/2)
	}
	// Again: nothing more to delete.
	if n, err := o.AckTelemetry(ctx, o.ID(), []ThingAck{{Thing: "bowl-a", Ranges: []wire.Range{{First: 1, Last: 5}}, SentUpTo: 12}}); err != nil || n != 0 {
		t.Fatalf("repeated AckTelemetry = %d, %v; want 0, nil", n, err)
	}
	// Bounded reads.
	if recs, _ := o.Telemetry(ctx, "bowl-a", 7, 14, 100); len(recs) != 3 || recs[0].Seq != 7 || recs[2].Seq != 14 {
		t.Fatalf("Telemetry(7..14) = %+v; want seqs 7, 13, 14", recs)
	}
}

func TestAckTelemetryOfAnotherOutboxDeletesNothing(t *testing.T) {
	ctx := context.Background()
	o := openTest(t, Config{})
	if err := o.Append(ctx, samples("bowl-a", 5, t0), nil); err != nil {
		t.Fatal(err)
	}
	n, err := o.AckTelemetry(ctx, "0123456789abcdef0123456789abcdef", []ThingAck{{Thing: "bowl-a", Ranges: []wire.Range{{First: 1, Last: 5}}, SentUpTo: 5}})
	if !errors.Is(err, ErrOtherOutbox) || n != 0 {
		t.Fatalf("AckTelemetry(other id) = %d, %v; want 0, ErrOtherOutbox", n, err)
	}
	if s, _ := o.Stats(); s.Telemetry.Records != 5 {
		t.Fatalf("records = %d; want 5", s.Telemetry.Records)
	}
}
