package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// TestCompletenessCommand runs `bowline completeness` as a process on
// DynamoDB Local after a real consumer rolled up a day of one bowl with a
// range the gateway dropped (reported through `bowline emit`), a hole and
// a resend: the statement's counts are exact. The daily job's form
// (--all --days 2) skips the stated day and states the missed one before
// it. The commands' AWS calls are checked against CompletenessRole and
// OperatorRole (docs/iam.md).
func TestCompletenessCommand(t *testing.T) {
	testkit.Long(t, "runs the bowline binary")
	iamtest.Record(t)
	bin := bowlineBin(t)
	names := freshStack(t)
	ctx := enginetest.Ctx(t)
	env := append(os.Environ(), resources.StackEnv+"="+names.Stack)
	runBin := func(args ...string) (string, error) {
		t.Helper()
		return runBinary(ctx, t, bin, env, args...)
	}
	const tnt, gw, thing = "acme", "gw-1", "gw-1:a"
	if _, err := runBin("devices", "register", "--thing", thing, "--tenant", tnt); err != nil {
		t.Fatal(err)
	}

	// Yesterday: the rollup rows' TTL (3 days after their window) must lie
	// ahead, or DynamoDB Local deletes them during the test.
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	dayArg := day.Format(time.DateOnly)
	t0 := day.Add(10 * time.Hour)
	cfg := durable.DefaultConfig()
	db := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
	cfg.DB = db
	cfg.Table = names.TelemetryTable()
	cfg.Devices, cfg.Letters, cfg.Publisher, cfg.Emitter = oneTenant(tnt), noLetters{}, noPublish{}, noEmit{}
	cfg.Now = func() time.Time { return t0.Add(2 * time.Hour) } // the rollups' TTL is judged against it
	c, err := durable.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	send := func(from, to uint64, at time.Time) {
		t.Helper()
		s := batch.Series{Thing: thing}
		for q := from; q <= to; q++ {
			s.Samples = append(s.Samples, batch.Sample{Seq: q, At: at.Add(time.Duration(q-from) * time.Second), Kind: durable.KindWeight, Value: int64(100+q) * 1000, Scale: 3})
		}
		p, err := batch.Encode(batch.Batch{Outbox: "ob1", SentAt: at, Things: []batch.Series{s}})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(map[string]any{"v": durable.RecordVersion, "tenant": tnt, "gateway": gw, "received_at": at.UnixMilli(), "payload": p})
		n++
		if _, err := c.Handle(ctx, []durable.Record{{Data: data, PartitionKey: gw, SequenceNumber: fmt.Sprintf("%020d", n), ShardID: "shardId-000000000000", ArrivalTime: at}}); err != nil {
			t.Fatal(err)
		}
	}
	send(1, 50, t0)
	send(61, 100, t0.Add(20*time.Minute))
	send(106, 120, t0.Add(50*time.Minute))
	send(90, 100, t0.Add(20*time.Minute+29*time.Second)) // the resend
	c.Flush(ctx)
	// Ingest writes a device event's thing into its payload; `bowline emit`
	// cannot (device fields only), so the drop goes through an engine.
	eng, err := engine.New(engine.Config{Client: db, EventsTable: names.EventsTable(), InboxTable: names.InboxTable(), Catalog: catalog.Bowline()})
	if err != nil {
		t.Fatal(err)
	}
	drop := map[string]any{"thing": thing, "from_seq": 51, "to_seq": 60, "count": 10, "reason": "disk_cap",
		"from": t0.Add(50 * time.Second).Format(time.RFC3339Nano), "to": t0.Add(59 * time.Second).Format(time.RFC3339Nano)}
	if _, err := eng.Emit(engine.WithTenant(ctx, tnt), catalog.TypeTelemetryDropped, drop); err != nil {
		t.Fatal(err)
	}

	out, err := runBin("completeness", "--thing", thing, "--day", dayArg, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got durable.Statement
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json output: %v", err)
	}
	want := durable.Statement{Thing: thing, Day: dayArg,
		Counts:   catalog.Counts{Assigned: 120, Durable: 105, Dropped: map[string]int64{"disk_cap": 10}, DroppedTotal: 10, Missing: 5, Duplicates: 11},
		Outboxes: map[string][][2]uint64{"ob1": {{1, 50}, {61, 100}, {106, 120}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("completeness = %+v;\nwant %+v", got, want)
	}
	if !strings.Contains(out, `"digest": "`+want.Digest()+`"`) {
		t.Errorf("output lacks the digest %s", want.Digest())
	}
	text, err := runBin("completeness", "--thing", thing, "--day", dayArg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"assigned (acked to the MCU)  120", "missing (holes)              5", "disk_cap 10", "bowl clock"} {
		if !strings.Contains(text, w) {
			t.Errorf("text output lacks %q", w)
		}
	}

	// The day anchored in the tenant's chain, once.
	out, err = runBin("completeness", "anchor", "--tenant", tnt, "--day", dayArg, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var stated struct {
		Seq    uint64                         `json:"seq"`
		Day    string                         `json:"day"`
		Things map[string]catalog.ThingCounts `json:"things"`
		Digest string                         `json:"digest"`
	}
	if err := json.Unmarshal([]byte(out), &stated); err != nil {
		t.Fatalf("anchor --json output: %v", err)
	}
	line := stated.Things[thing]
	if stated.Day != dayArg || line.Missing != 5 || line.Duplicates != 11 || line.Digest != want.Digest() || stated.Seq != 2 {
		t.Fatalf("stated = %+v; want day %s, %s with 5 missing, 11 duplicates, digest %s, at seq 2", stated, dayArg, thing, want.Digest())
	}
	rep, err := engine.NewVerifier(db, names.EventsTable(), 100).VerifyChain(ctx, tnt)
	if err != nil || !rep.Intact || rep.HeadSeq != 2 {
		t.Fatalf("chain after the anchor: %+v, %v; want intact with head seq 2", rep, err)
	}
	again, err := runBin("completeness", "anchor", "--tenant", tnt, "--day", dayArg)
	if err != nil || !strings.Contains(again, "already stated") {
		t.Fatalf("second anchor said %q, %v; want \"already stated\"", again, err)
	}
	// The daily job: yesterday is stated, the day before was missed.
	job, err := runBin("completeness", "anchor", "--all", "--days", "2", "--day", dayArg)
	if err != nil {
		t.Fatal(err)
	}
	before := day.Add(-24 * time.Hour).Format(time.DateOnly)
	for _, w := range []string{"already stated: tenant " + tnt + ", " + dayArg, "stated: tenant " + tnt + ", " + before + " UTC (bowl clock), 1 bowl in 1 event"} {
		if !strings.Contains(job, w) {
			t.Errorf("anchor --all --days 2 said %q; want a line with %q", job, w)
		}
	}
	if rep, err := engine.NewVerifier(db, names.EventsTable(), 100).VerifyChain(ctx, tnt); err != nil || !rep.Intact || rep.HeadSeq != 3 {
		t.Fatalf("chain after the catch-up: %+v, %v; want intact with head seq 3", rep, err)
	}
	if _, err := runBin("completeness", "anchor", "--tenant", "nosuch-"+randHex(4)); err == nil {
		t.Error("anchor of an unknown tenant succeeded; want exit 2")
	}
}

type oneTenant string

func (o oneTenant) Lookup(_ context.Context, thing string) (devices.Device, error) {
	return devices.Device{Thing: thing, Tenant: string(o)}, nil
}

type noLetters struct{}

func (noLetters) Record(context.Context, deadletter.Letter) error       { return nil }
func (noLetters) RecordPoison(context.Context, deadletter.Letter) error { return nil }

type noPublish struct{}

func (noPublish) Publish(context.Context, string, []byte, int) error { return nil }

type noEmit struct{}

func (noEmit) EmitEvent(context.Context, engine.Event) (engine.Envelope, error) {
	return engine.Envelope{}, nil
}
