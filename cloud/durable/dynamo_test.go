package durable

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB) }

// countingDB counts the writes a consumer makes through a real client.
type countingDB struct {
	*dynamodb.Client
	mu                 sync.Mutex
	puts, updates, get int
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.mu.Lock()
	c.puts++
	c.mu.Unlock()
	return c.Client.PutItem(ctx, in, opts...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.mu.Lock()
	c.updates++
	c.mu.Unlock()
	return c.Client.UpdateItem(ctx, in, opts...)
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.mu.Lock()
	c.get++
	c.mu.Unlock()
	return c.Client.GetItem(ctx, in, opts...)
}

// The consumer against DynamoDB Local: N records from a gateway make a
// handful of writes; two processes that share a gateway (a reshard) merge
// their state rows through optimistic locking and write rollup rows of
// their own; ReadRollups reads back every sample once. Its AWS calls are recorded as IAM
// requests (docs/iam.md).
func TestDynamoDBStateAndRollups(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	names := lstest.Names(t)
	// Rows carry TTLs from the consumer's clock and DynamoDB Local
	// deletes expired rows: the clock starts near the real one.
	base := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	rec, err := awscalls.Open(filepath.Join(t.TempDir(), "calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The consumer's calls go through the recorded client; the test's own
	// (registering devices, reading rows back) through plain.
	cfg := rec.Config(lstest.AWSConfig(t), awscalls.Label{Part: "consumer", Stack: names.Stack})
	recorded := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	client := dynamodb.NewFromConfig(lstest.AWSConfig(t), awsenv.DynamoDBOptions)
	db := &countingDB{Client: recorded}

	reg, err := devices.New(client, names.AppTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tnt, gw := "t-"+ulid.Make().String(), "gw-"+ulid.Make().String()
	bowls := []string{gw + ":a", gw + ":b"}
	for _, th := range bowls {
		if _, err := reg.Register(ctx, th, tnt); err != nil {
			t.Fatal(err)
		}
	}
	consumerReg, err := devices.New(recorded, names.AppTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := devices.NewCache(consumerReg, devices.CacheConfig{})
	if err != nil {
		t.Fatal(err)
	}
	letters, err := deadletter.New(recorded, names.DeadLettersTable(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{pub: &fakePublisher{}, emit: &fakeEmitter{}, obs: &countObserver{}, clock: &clock{t: base}}
	newConsumer := func() *Consumer {
		c := DefaultConfig()
		c.DB, c.Table, c.Devices, c.Letters, c.Publisher, c.Emitter = db, names.TelemetryTable(), cache, letters, r.pub, r.emit
		c.Observer, c.Now, c.Logger = r.obs, r.clock.Now, testLogger(t)
		con, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		return con
	}
	a := newConsumer()

	// Two hours of one batch a minute, two bowls, 60 samples each; every
	// tenth batch is read twice (at-least-once).
	const n = 120
	var recs int
	for i := 0; i < n; i++ {
		at := base.Add(time.Duration(i) * time.Minute)
		r.clock.Set(at)
		q := uint64(60*i + 1)
		x := r.record(t, tnt, gw, at, encode(t, "ob1", at, weights(bowls[0], q, q+59, at), weights(bowls[1], q, q+59, at)))
		batchRecs := []Record{x}
		if i%10 == 0 {
			batchRecs = append(batchRecs, x)
		}
		recs += len(batchRecs)
		if res, err := a.Handle(ctx, batchRecs); err != nil || len(res.BatchItemFailures) != 0 {
			t.Fatalf("Handle #%d = %v, %v", i, res, err)
		}
	}
	// A forged record (another tenant) is a dead letter, not a write here.
	forged := r.record(t, "other-"+tnt, gw, base.Add(n*time.Minute), encode(t, "ob1", base, weights(bowls[0], 1, 1, base)))
	if _, err := a.Handle(ctx, []Record{forged}); err != nil {
		t.Fatal(err)
	}
	a.Flush(ctx)
	t.Logf("%d records (%d batches, %d samples): %d PutItem (state, rollups and one dead letter), %d UpdateItem, %d GetItem",
		recs, n, 2*60*n, db.puts, db.updates, db.get)
	// A put the SDK retried after a lost answer meets its own row and
	// reads it: one GetItem per conflict on a loaded machine.
	if db.get != 1+r.obs.conflicts {
		t.Errorf("GetItem on the telemetry table = %d; want 1 (the state row, on first use) + %d conflicts", db.get, r.obs.conflicts)
	}
	if want := n/int(DefaultAckEvery/time.Minute) + 2*(n/int(DefaultRollupEvery/time.Minute)) + 1 + 1; db.updates != 0 || db.puts > want {
		t.Errorf("writes = %d puts, %d updates for %d records; want at most %d: one state put per ack, one rollup put per bowl per window, a dead letter", db.puts, db.updates, recs, want)
	}
	if r.obs.dups != 2*60*(n/10) {
		t.Errorf("duplicates = %d; want %d", r.obs.dups, 2*60*(n/10))
	}
	for _, th := range bowls {
		pts, err := ReadRollups(ctx, client, names.TelemetryTable(), th, base, base.Add(n*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var count int64
		for _, p := range pts {
			count += p.Count
		}
		if len(pts) != n || count != 60*n {
			t.Errorf("%s: %d points, %d samples; want %d points, %d samples", th, len(pts), count, n, 60*n)
		}
	}

	// A second process (the gateway's shard moved) holds an older view of
	// the row; its write conflicts, it merges and writes the union.
	b := newConsumer()
	if _, err := b.gateway(ctx, tnt, gw); err != nil {
		t.Fatal(err)
	}
	r.clock.Set(base.Add(3 * time.Hour))
	if _, err := a.Handle(ctx, []Record{r.record(t, tnt, gw, r.clock.Now(), encode(t, "ob1", r.clock.Now(), weights(bowls[0], 7201, 7210, r.clock.Now())))}); err != nil {
		t.Fatal(err)
	}
	r.clock.Set(base.Add(4 * time.Hour))
	if _, err := b.Handle(ctx, []Record{r.record(t, tnt, gw, r.clock.Now(), encode(t, "ob1", r.clock.Now(), weights(bowls[0], 8001, 8010, base.Add(3*time.Hour))))}); err != nil {
		t.Fatal(err)
	}
	a.Flush(ctx)
	b.Flush(ctx)
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(names.TelemetryTable()), Key: stateKey(tnt, gw), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeState(tnt, gw, []byte(out.Item["state"].(*types.AttributeValueMemberS).Value))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.outboxes["ob1"].things[bowls[0]].spans, (spanSet{{1, 7210}, {8001, 8010}}); !slices.Equal(got, want) {
		t.Errorf("row spans after the race = %v; want %v", got, want)
	}
	// Both wrote minutes of the same window (3h), each its own row:
	// ReadRollups folds them.
	pts, err := ReadRollups(ctx, client, names.TelemetryTable(), bowls[0], base.Add(3*time.Hour), base.Add(4*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var count int64
	for _, p := range pts {
		count += p.Count
	}
	if count != 20 {
		t.Errorf("hour 3 samples = %d; want 20 from both processes", count)
	}

	calls, err := awscalls.Read(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, c := range calls {
		if c.Error != "" {
			t.Errorf("call %+v unrecorded: %s", c, c.Error)
		}
		a := c.Action + " " + c.Resource[strings.LastIndex(c.Resource, "/")+1:]
		if !slices.Contains(actions, a) {
			actions = append(actions, a)
		}
	}
	sort.Strings(actions)
	want := []string{
		"dynamodb:GetItem " + names.AppTable(),
		"dynamodb:GetItem " + names.TelemetryTable(),
		"dynamodb:PutItem " + names.DeadLettersTable(),
		"dynamodb:PutItem " + names.TelemetryTable(),
	}
	if !slices.Equal(actions, want) {
		t.Errorf("recorded IAM requests = %q; want %q", actions, want)
	}
}
