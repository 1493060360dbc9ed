package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/completeness"
	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/deploy/cfn"
	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/cli"
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

// TestCompletenessAnchorGoesOnPastAFailedTenant: in the daily job's form
// (--all), a tenant whose day cannot be stated (here a day partly stated
// with another digest, as a crashed run of a changed day leaves it) is
// logged at level=ERROR with its name, the tenants after it are still
// stated, and the command exits 1 naming it, without the heartbeat. A
// tenant whose chain stops stating days before the oldest still whole is
// reported as days lost, once per run, also at level=ERROR. Stating days
// already stated again costs one read of the tenant's log and nothing else.
func TestCompletenessAnchorGoesOnPastAFailedTenant(t *testing.T) {
	testkit.Long(t, "runs the bowline binary")
	bin := bowlineBin(t)
	names := freshStack(t)
	ctx := enginetest.Ctx(t)
	db := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.Add(-24 * time.Hour)
	date := func(d time.Time) string { return d.Format(time.DateOnly) }
	at := today
	eng, err := engine.New(engine.Config{Client: db, EventsTable: names.EventsTable(), InboxTable: names.InboxTable(), Catalog: catalog.Bowline(),
		Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	emit := func(tn, typ string, payload any) {
		t.Helper()
		ectx := engine.WithTenant(ctx, tn)
		if typ == catalog.TypeCompletenessStated {
			ectx = engine.WithActor(ectx, catalog.ProducerCompleteness)
		}
		if _, err := eng.Emit(ectx, typ, payload); err != nil {
			t.Fatal(err)
		}
	}
	drop := func(thing string) map[string]any {
		return map[string]any{"thing": thing, "from_seq": 1, "to_seq": 2, "count": 2, "reason": "ttl",
			"from": at.Format(time.RFC3339Nano), "to": at.Add(time.Second).Format(time.RFC3339Nano)}
	}
	// alpha: its chain began six days ago and states five days ago last:
	// four and three days ago are out of reach (the oldest day still whole
	// is the day before yesterday).
	at = today.Add(-6*24*time.Hour + time.Hour)
	emit("alpha", catalog.TypeTelemetryDropped, drop("gw-a:1"))
	at = today.Add(-4*24*time.Hour + time.Hour)
	emit("alpha", catalog.TypeCompletenessStated, catalog.CompletenessStated{Day: date(today.Add(-5 * 24 * time.Hour)), Things: map[string]catalog.ThingCounts{}, Digest: strings.Repeat("a", 64)})
	// bravo: yesterday's part 1 of 2 stated with a digest the day does
	// not compute to.
	at = today.Add(time.Minute)
	emit("bravo", catalog.TypeTelemetryDropped, drop("gw-b:1"))
	emit("bravo", catalog.TypeCompletenessStated, catalog.CompletenessStated{Day: date(yesterday), Things: map[string]catalog.ThingCounts{}, Digest: strings.Repeat("0", 64), Part: 1, Parts: 2})
	// charlie, after bravo in the job's (sorted) order: nothing stated yet.
	emit("charlie", catalog.TypeTelemetryDropped, drop("gw-c:1"))

	cmd := exec.Command(bin, "completeness", "anchor", "--all", "--days", "2", "--day", date(yesterday))
	cmd.Env = append(os.Environ(), resources.StackEnv+"="+names.Stack)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = testkit.RunChild(ctx, t, "bowline completeness anchor", cmd)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("completeness anchor --all with bravo failing = %v; want exit 1", err)
	}
	for _, tn := range []string{"alpha", "charlie"} {
		for _, d := range []time.Time{yesterday.Add(-24 * time.Hour), yesterday} {
			if w := "stated: tenant " + tn + ", " + date(d) + " UTC"; !strings.Contains(stdout.String(), w) {
				t.Errorf("stdout lacks %q", w)
			}
		}
		rep, err := engine.NewVerifier(db, names.EventsTable(), 100).VerifyChain(ctx, tn)
		if want := map[string]uint64{"alpha": 4, "charlie": 3}[tn]; err != nil || !rep.Intact || rep.HeadSeq != want {
			t.Errorf("%s's chain after the run: %+v, %v; want intact at seq %d", tn, rep, err, want)
		}
	}
	logged := func(words ...string) bool {
		for _, l := range strings.Split(stderr.String(), "\n") {
			all := true
			for _, w := range words {
				all = all && strings.Contains(l, w)
			}
			if all {
				return true
			}
		}
		return false
	}
	if !logged("level=ERROR", "tenant=bravo", "day partly stated with another digest") {
		t.Errorf("stderr has no level=ERROR line naming tenant=bravo and its error")
	}
	if !logged("1 of 3 tenants not stated: bravo") {
		t.Errorf("stderr does not end naming bravo: want %q", "1 of 3 tenants not stated: bravo")
	}
	if logged("tenant=alpha", "anchor failed") || logged("tenant=charlie", "anchor failed") {
		t.Errorf("stderr reports a failure of alpha or charlie")
	}
	lost := []string{"level=ERROR", "msg=completeness_days_lost", "tenant=alpha", "from=" + date(today.Add(-4*24*time.Hour)), "to=" + date(today.Add(-3*24*time.Hour)), "days=2"}
	if !logged(lost...) {
		t.Errorf("stderr has no line with all of %q", lost)
	}
	if logged("completeness_days_lost", "tenant=charlie") || logged("completeness_days_lost", "tenant=bravo") {
		t.Errorf("days lost reported for a tenant that lost none")
	}
	if logged("completeness_anchored") {
		t.Errorf("the heartbeat was logged by a run that failed a tenant")
	}

	// What a day already stated costs: charlie's two days again read its
	// log (one Query page) and nothing else, and emit nothing.
	count := &countingDB{LogDB: db, queries: map[string]int{}}
	tables := completeness.Tables{Telemetry: names.TelemetryTable(), Events: names.EventsTable()}
	rs, _, err := completeness.Anchor(ctx, count, tables, refuseEmit{t}, "charlie", nil, []time.Time{yesterday.Add(-24 * time.Hour), yesterday}, completeness.OldestWhole(time.Now()))
	if err != nil || len(rs) != 2 || !rs[0].Already || !rs[1].Already {
		t.Fatalf("Anchor of charlie's stated days = %+v, %v; want both already stated", rs, err)
	}
	if want := map[string]int{names.EventsTable(): 1}; !reflect.DeepEqual(count.queries, want) || count.gets != 0 {
		t.Errorf("Anchor of two stated days: Query per table %v, %d GetItem; want %v and none", count.queries, count.gets, want)
	}
}

// countingDB counts the calls Anchor makes.
type countingDB struct {
	engine.LogDB
	queries map[string]int
	gets    int
}

func (c *countingDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries[*in.TableName]++
	return c.LogDB.Query(ctx, in, opts...)
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets++
	return c.LogDB.GetItem(ctx, in, opts...)
}

// refuseEmit fails the test on any emit.
type refuseEmit struct{ t *testing.T }

func (r refuseEmit) EmitEvent(_ context.Context, ev engine.Event) (engine.Envelope, error) {
	r.t.Errorf("emit of %s under %s; want none", ev.Type, ev.IdempotencyKey)
	return engine.Envelope{}, errors.New("no emit here")
}

// TestCompletenessAnchorRefusesAnExpiredDay: a day whose rollups have
// begun to expire would be stated with wrong counts for good, so --day
// (or --days reaching back to it) is a usage error naming it, before any
// AWS call.
func TestCompletenessAnchorRefusesAnExpiredDay(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for _, args := range [][]string{
		{"--tenant", "t1", "--day", today.Add(-3 * 24 * time.Hour).Format(time.DateOnly)},
		{"--all", "--day", today.Add(-2 * 24 * time.Hour).Format(time.DateOnly), "--days", "2"},
		{"--tenant", "t1", "--day", "2020-01-01"},
	} {
		err := completenessAnchorCmd(ctx, args, io.Discard)
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "rollups have begun to expire") {
			t.Errorf("completeness anchor %s = %v; want a usage error: rollups have begun to expire", strings.Join(args, " "), err)
		}
	}
}

// TestCompletenessScheduleCatchesUpAllItCan: the daily job states as many
// days back as the rollups' TTL leaves whole (maxCatchUpDays), so a run
// makes good every missed run whose days can still be stated.
func TestCompletenessScheduleCatchesUpAllItCan(t *testing.T) {
	root, err := cfn.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := cfn.Load(filepath.Join(root, iamtest.TemplatePath))
	if err != nil {
		t.Fatal(err)
	}
	defs, _ := tpl.Resources["CompletenessTaskDefinition"].Properties["ContainerDefinitions"].([]any)
	if len(defs) != 1 {
		t.Fatalf("CompletenessTaskDefinition has %d containers; want 1", len(defs))
	}
	c, _ := defs[0].(map[string]any)
	cmd, _ := c["Command"].([]any)
	want := []any{"completeness", "anchor", "--all", "--days", strconv.Itoa(maxCatchUpDays)}
	if !reflect.DeepEqual(cmd, want) {
		t.Errorf("completeness task command = %v; want %v (maxCatchUpDays, durable.RollupTTL %v)", cmd, want, durable.RollupTTL)
	}
	if maxCatchUpDays != 2 {
		t.Errorf("maxCatchUpDays = %d; want 2 with RollupTTL 3 days (update the docs and the schedule's tests)", maxCatchUpDays)
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
