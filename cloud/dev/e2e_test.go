package dev_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/catalog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/bowline-iot/bowline/cloud/dev"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/deploy/cfn/iamtest"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/reconcile"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
	"github.com/bowline-iot/bowline/internal/testkit"
)

func TestMain(m *testing.M) {
	lstest.Main(m, localstack.DynamoDB, localstack.SQS, localstack.Kinesis, localstack.MQTT)
}

// The simulated day: two bowls (one per tenant) at e2eRateHz (detection
// finds the meals at 3 Hz; fewer samples keep kinesis-local out of its slow regime on a loaded machine), at a speed that the agents keep up with
// under -race on two cores (the day takes about 95 s). The MCUs get
// the largest ring, so a slow moment backs readings up instead of refusing
// them. The gateways' time-sync round trips are measured on the simulated
// clock, so a real stall of d skews sample times by up to d*speed/2: at
// 1800x a loaded machine's half-second stalls split meals and moved them
// outside matchWindow (6 of 17 matched, twice); 900x halves that skew.
const (
	e2eBowls  = 2
	e2eRateHz = 3
	e2eDay    = 24 * time.Hour
	e2eSpeed  = 900
)

// TestSimulatedDayEndToEnd runs `bowline dev`'s wiring on the local stack
// for a simulated day and checks the promises: every ground-truth
// meal the edge detected is exactly one intake record; every telemetry
// sample is in Kinesis by (thing, seq); an order paid through the webhook
// reaches each fake provider once per subscription; every tenant's chain
// verifies; the operator's reconcile report answers. Every AWS call the
// parts make is recorded and, at the end, checked against the role that
// makes it in AWS (iamtest, docs/iam.md).
func TestSimulatedDayEndToEnd(t *testing.T) {
	ctx := context.Background()
	awsCfg := lstest.AWSConfig(t)
	iamtest.Record(t)
	names, err := resources.New("e" + randHex(4))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var truth []sim.Truth
	rejections := &rejectLog{}
	// The day ends an hour before now, so no reading lies in the future.
	start := time.Now().UTC().Add(-e2eDay - time.Hour).Truncate(time.Second)
	sys, err := dev.Start(ctx, dev.Config{
		Names: names, Stack: lstest.Stack(t), Bowls: e2eBowls, Speed: e2eSpeed, Start: start, Duration: e2eDay,
		RateHz: e2eRateHz, RingSize: 1<<16 - 1, APIAddr: "127.0.0.1:0", RelayPoll: 50 * time.Millisecond,
		OnTruth:        func(tr sim.Truth) { mu.Lock(); truth = append(truth, tr); mu.Unlock() },
		IngestObserver: rejections, ConsoleNoTelemetry: true,
		Logger: testkit.Logger(t, slog.LevelWarn),
	})
	if err != nil {
		t.Fatalf("dev.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sys.Close(); err != nil {
			t.Errorf("System.Close: %v", err)
		}
	})
	follower := followStream(t, kinesis.NewFromConfig(awsCfg), names.TelemetryStream())
	began := time.Now()
	select {
	case <-sys.SimDone():
	case <-time.After(5 * time.Minute): // hang guard
		t.Fatalf("the simulated day did not end; figures %+v; errors %v", sys.Figures(ctx), sys.Err())
	}
	t.Logf("simulated day in %v", time.Since(began).Round(time.Millisecond))
	// Everything the bowls numbered reached an agent, and every agent's
	// outbox emptied: the broker holds the rest for ingest's session.
	testkit.WaitProgress(t, "every MCU ring and outbox to drain", time.Second, 3*time.Minute, func() (bool, int) {
		left := 0
		for _, b := range sys.Bowls() {
			st, err := b.Agent().Outbox().Stats()
			if err != nil {
				return false, -left - 1
			}
			left += b.MCU().Stats().RingLen + int(st.Events.Records+st.Telemetry.Records)
		}
		return left == 0, -left
	})
	ddb := dynamodb.NewFromConfig(awsCfg, awsenv.DynamoDBOptions)
	cfg := sys.Config()
	// Each agent counts the records its outbox took, both lanes. Ingest
	// has them all once the stream holds that many samples of the thing
	// beside the thing's events in the log.
	appended := map[string]int{}
	thingOf := map[string]string{} // device id -> thing name
	for _, b := range sys.Bowls() {
		thingOf[b.Device] = b.Thing
		all, err := metric(ctx, b.StatusURL+"/metrics", `bowline_edge_outbox_appended_total{lane="all"}`)
		if err != nil {
			t.Fatal(err)
		}
		appended[b.Thing] = int(all)
		st, _ := b.Agent().Outbox().Stats()
		if st.Telemetry.Dropped != 0 || st.Events.Dropped != 0 {
			t.Errorf("%s dropped %d telemetry and %d event records at the edge; want 0", b.Thing, st.Telemetry.Dropped, st.Events.Dropped)
		}
		t.Logf("%s: MCU %+v", b.Thing, b.MCU().Stats())
	}
	var meals map[string]meal
	var deviceEvents map[string]int
	// How long ingest takes depends on how busy the emulators are (kinesis-
	// local slows down on a loaded machine), so the wait fails only when
	// nothing moves for a while, not after a fixed time.
	testkit.WaitProgress(t, "ingest to take every record", time.Second, 3*time.Minute, func() (bool, int) {
		if err := follower.failed(); err != nil {
			t.Fatalf("following the telemetry stream: %v", err)
		}
		meals, deviceEvents = readEvents(t, ddb, names, cfg.Tenants)
		done, progress := true, 0
		for thing, n := range appended {
			got := follower.count(thing) + deviceEvents[thing]
			progress += got
			done = done && got >= n
		}
		return done, progress
	})
	t.Logf("ingested after %v; figures %s", time.Since(began).Round(time.Millisecond), sys.Figures(ctx).Line())

	// One paid order per tenant. Its events queue behind the tenant's bowl
	// events in the tenant's FIFO group, so once the providers saw it, the
	// worker has finished every earlier event of that tenant.
	set := sys.Fakes().Set
	providers := map[*fakes.Fake]string{set.Shopify: catalog.SubShopifyMirror, set.Shipping: catalog.SubBookShipment, set.Notify: catalog.SubNotifyBuyer}
	paid := map[string]string{} // tenant -> com.payment_completed id
	for tok, tenant := range cfg.Settings.Tokens {
		c := &dev.Client{URL: sys.APIURL(), Token: tok, Secret: cfg.Settings.WebhookSecret}
		id, err := c.Order(ctx, "cust-"+tenant, "pet-"+tenant, 4999)
		if err != nil {
			t.Fatalf("order for %s: %v", tenant, err)
		}
		ev, err := c.Pay(ctx, id, "pay_"+randHex(6), 4999)
		if err != nil {
			t.Fatalf("pay order %s of %s: %v", id, tenant, err)
		}
		paid[tenant] = ev
	}
	testkit.WaitFor(t, "every provider to see every payment", 2*time.Minute, func() bool {
		for f, sub := range providers {
			n := f.CountByKey()
			for _, ev := range paid {
				if n[ev+":"+sub] == 0 {
					return false
				}
			}
		}
		return true
	})

	t.Run("every detected meal is one intake record", func(t *testing.T) {
		counted := intakeCounts(t, ddb, names)
		for id, m := range meals {
			if n := counted[id]; n != 1 {
				t.Errorf("meal %s (%s/%s, pet %s) counted in %d intake rows; want 1", id, m.Thing, m.DeviceEventID, m.PetTag, n)
			}
		}
		for id := range counted {
			if _, ok := meals[id]; !ok {
				t.Errorf("intake row counts event %s, which is no bowl.meal_finished event", id)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		found, truthMeals := 0, 0
		for _, tr := range truth {
			if tr.Kind != sim.KindMeal {
				continue
			}
			truthMeals++
			if id, ok := matchMeal(tr, thingOf[tr.Device], meals); ok {
				found++
				if counted[id] != 1 {
					t.Errorf("true meal of %s at %s (pet %s, %.1f g): event %s counted %d times; want 1", tr.Device, tr.Start.Format(time.RFC3339), tr.PetTag, tr.Grams, id, counted[id])
				}
			}
		}
		t.Logf("%d true meals, %d found by edge detection, %d meal events", truthMeals, found, len(meals))
		if truthMeals == 0 || found < truthMeals/2 {
			t.Errorf("edge detection found %d of %d true meals; want at least half (is the simulated clock wired to the agents?)", found, truthMeals)
		}
	})

	t.Run("every telemetry sample is in Kinesis", func(t *testing.T) {
		seen, bad, err := follower.finish()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bad {
			t.Error(b)
		}
		for _, b := range sys.Bowls() {
			// The outbox counted records of both lanes; every event it
			// took is in the log once, so the rest is telemetry.
			appended := appended[b.Thing] - deviceEvents[b.Thing]
			got := seen[b.Thing]
			missing := 0
			for seq := uint64(1); seq <= uint64(max(appended, 0)); seq++ {
				if !got[seq] {
					missing++
				}
			}
			if missing > 0 || len(got) != appended || appended <= 0 {
				t.Errorf("%s: %d of %d samples missing in Kinesis, %d distinct seqs there; want none missing and %d", b.Thing, missing, appended, len(got), appended)
			}
			t.Logf("%s: %d telemetry samples and %d events at the edge; every sample in Kinesis", b.Thing, appended, deviceEvents[b.Thing])
		}
	})

	t.Run("a paid order reaches each provider once", func(t *testing.T) {
		for f, sub := range providers {
			n := f.CountByKey()
			for tenant, ev := range paid {
				if got := n[ev+":"+sub]; got != 1 {
					t.Errorf("%s saw %d calls for %s of %s; want 1", f.Kind(), got, sub, tenant)
				}
			}
		}
	})

	t.Run("the operator's reconcile report answers", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, sys.APIURL()+"/v1/ops/reconcile", nil)
		req.Header.Set("Authorization", "Bearer "+cfg.Settings.OpsToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rep reconcile.Report
		if err := json.NewDecoder(resp.Body).Decode(&rep); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("GET /v1/ops/reconcile = %d (%v); want 200 with a report", resp.StatusCode, err)
		}
		if rep.DeadLetters != 0 || rep.DLQDepth != 0 {
			t.Errorf("reconcile: %d dead letters, DLQ depth %d; want none", rep.DeadLetters, rep.DLQDepth)
		}
	})

	t.Run("every chain is intact", func(t *testing.T) {
		v := engine.NewVerifier(ddb, names.EventsTable(), 0)
		for _, tenant := range cfg.Tenants {
			rep, err := v.VerifyChain(ctx, tenant)
			if err != nil {
				t.Fatalf("VerifyChain(%s): %v", tenant, err)
			}
			if !rep.Intact || rep.Events == 0 {
				t.Errorf("chain of %s: %+v; want intact with events", tenant, rep)
			}
		}
		f := sys.Figures(ctx)
		if f.Dead != 0 || f.Rejected != 0 || f.DLQDepth != 0 {
			t.Errorf("figures %s; want no dead deliveries, no rejections, empty DLQ; rejections: %v", f.Line(), rejections.reasons())
		}
	})
	if err := sys.Err(); err != nil {
		t.Errorf("a part stopped on its own: %v", err)
	}
	if t.Failed() { // show what ingest refused, if anything
		out, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(names.DeadLettersTable()), Limit: aws.Int32(5)})
		if err == nil {
			for _, it := range out.Items {
				var m map[string]any
				_ = attributevalue.UnmarshalMap(it, &m)
				t.Logf("dead letter: %v", m)
			}
		}
	}
}

// meal is a bowl.meal_finished event as stored.
type meal struct {
	Thing         string
	DeviceEventID string
	PetTag        string
	StartedAt     time.Time
	At            time.Time
}

// readEvents reads every tenant's log and returns its meals by event id,
// and how many events each thing's gateway sent (actor device:<thing>).
func readEvents(t *testing.T, ddb *dynamodb.Client, names resources.Names, tenants []string) (map[string]meal, map[string]int) {
	t.Helper()
	out, devices := map[string]meal{}, map[string]int{}
	for _, tenant := range tenants {
		p := dynamodb.NewQueryPaginator(ddb, &dynamodb.QueryInput{
			TableName: aws.String(names.EventsTable()), KeyConditionExpression: aws.String("pk = :pk"), ConsistentRead: aws.Bool(true),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: engine.EventPK(tenant)}},
		})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatalf("read events of %s: %v", tenant, err)
			}
			for _, item := range page.Items {
				env, err := engine.DecodeItem(item)
				if err != nil {
					t.Fatalf("event row of %s: %v", tenant, err)
				}
				if thing, ok := strings.CutPrefix(env.Actor, "device:"); ok {
					devices[thing]++
				}
				if env.Type != "bowl.meal_finished" {
					continue
				}
				var m struct {
					Thing         string `json:"thing"`
					DeviceEventID string `json:"device_event_id"`
					PetTag        string `json:"pet_tag"`
					StartedAt     string `json:"started_at"`
					DeviceAt      string `json:"device_at"`
				}
				if err := env.DecodePayload(&m); err != nil {
					t.Fatalf("meal %s: %v", env.ID, err)
				}
				st, _ := time.Parse(time.RFC3339Nano, m.StartedAt)
				at, _ := time.Parse(time.RFC3339Nano, m.DeviceAt)
				out[env.ID] = meal{Thing: m.Thing, DeviceEventID: m.DeviceEventID, PetTag: m.PetTag, StartedAt: st, At: at}
			}
		}
	}
	return out, devices
}

// intakeCounts scans the app table's intake rows and counts, per event id,
// the rows that hold it; it fails on a row whose meal count or grams
// disagree with its event ids (a meal added twice).
func intakeCounts(t *testing.T, ddb *dynamodb.Client, names resources.Names) map[string]int {
	t.Helper()
	counts := map[string]int{}
	p := dynamodb.NewScanPaginator(ddb, &dynamodb.ScanInput{
		TableName: aws.String(names.AppTable()), ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("entity = :e"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":e": &ddbtypes.AttributeValueMemberS{Value: subscribers.EntityIntake}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("scan intake rows: %v", err)
		}
		for _, item := range page.Items {
			var row struct {
				PK       string   `dynamodbav:"pk"`
				SK       string   `dynamodbav:"sk"`
				Meals    int      `dynamodbav:"meals"`
				EventIDs []string `dynamodbav:"event_ids,stringset"`
			}
			if err := attributevalue.UnmarshalMap(item, &row); err != nil {
				t.Fatalf("intake row: %v", err)
			}
			if row.Meals != len(row.EventIDs) {
				t.Errorf("intake row %s %s: meals %d but %d event ids; want equal", row.PK, row.SK, row.Meals, len(row.EventIDs))
			}
			for _, id := range row.EventIDs {
				counts[id]++
			}
		}
	}
	return counts
}

// matchWindow widens a true meal when matching detected ones: at this speed
// the bridge's uptime-to-clock mapping (time syncs over a busy link) can
// be off by minutes of simulated time, and a pet's meals are hours apart.
const matchWindow = 15 * time.Minute

// matchMeal finds the detected meal of a true one: same bowl (thing, the
// name of tr.Device in the cloud) and pet, the detected start within the
// true meal widened by matchWindow.
func matchMeal(tr sim.Truth, thing string, meals map[string]meal) (string, bool) {
	ids := make([]string, 0, len(meals))
	for id := range meals {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := meals[id]
		if m.Thing != thing || m.PetTag != tr.PetTag {
			continue
		}
		if !m.StartedAt.Before(tr.Start.Add(-matchWindow)) && !m.StartedAt.After(tr.End.Add(matchWindow)) {
			return id, true
		}
	}
	return "", false
}

// streamFollower reads the telemetry stream while the day runs, so the
// check at the end only reads the tail.
type streamFollower struct {
	kin    *kinesis.Client
	stream string
	done   chan struct{} // closed by finish: read to the end, then stop
	wg     sync.WaitGroup

	mu   sync.Mutex
	seen map[string]map[uint64]bool
	bad  []string
	err  error
}

// followStream starts reading every shard of stream from its start.
func followStream(t *testing.T, kin *kinesis.Client, stream string) *streamFollower {
	t.Helper()
	ctx := context.Background()
	f := &streamFollower{kin: kin, stream: stream, done: make(chan struct{}), seen: map[string]map[uint64]bool{}}
	shards, err := kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatalf("list shards of %s: %v", stream, err)
	}
	for _, sh := range shards.Shards {
		it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: sh.ShardId, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		f.wg.Go(func() { f.read(ctx, aws.ToString(sh.ShardId), it.ShardIterator) })
	}
	t.Cleanup(func() { f.finish() })
	return f
}

// read follows one shard. A failed read is retried (a busy kinesis-local
// can time out, and an iterator expires after 5 minutes, as in Kinesis):
// the follower picks up after the last record it saw. It gives up only
// after 20 failures in a row, and the error then fails the test's wait.
func (f *streamFollower) read(ctx context.Context, shard string, iter *string) {
	finishing, last, failures := false, "", 0
	for iter != nil {
		if !finishing {
			select {
			case <-f.done:
				finishing = true // everything is in: one more pass to the end
			default:
			}
		}
		out, err := f.kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(500)})
		if err != nil {
			if failures++; failures >= 20 {
				f.mu.Lock()
				f.err = fmt.Errorf("read %s shard %s: %w", f.stream, shard, err)
				f.mu.Unlock()
				return
			}
			time.Sleep(time.Second)
			in := &kinesis.GetShardIteratorInput{StreamName: aws.String(f.stream), ShardId: aws.String(shard), ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon}
			if last != "" {
				in.ShardIteratorType, in.StartingSequenceNumber = ktypes.ShardIteratorTypeAfterSequenceNumber, aws.String(last)
			}
			if it, err := f.kin.GetShardIterator(ctx, in); err == nil {
				iter = it.ShardIterator
			}
			continue
		}
		failures = 0
		f.add(out.Records)
		if n := len(out.Records); n > 0 {
			last = aws.ToString(out.Records[n-1].SequenceNumber)
		}
		iter = out.NextShardIterator
		if len(out.Records) == 0 {
			if finishing {
				return
			}
			select {
			case <-f.done:
				finishing = true
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// failed is the error that stopped a shard's reader, if any.
func (f *streamFollower) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *streamFollower) add(recs []ktypes.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		// Record format 2, decoded as any reader of the stream would
		// (docs/telemetry-path.md); duplicates collapse on (thing, seq)
		// within the run's one outbox per gateway.
		rec, err := durable.DecodeRecord(r.Data)
		if err != nil {
			f.bad = append(f.bad, fmt.Sprintf("record %s: %v", aws.ToString(r.SequenceNumber), err))
			continue
		}
		for _, ser := range rec.Things {
			if f.seen[ser.Thing] == nil {
				f.seen[ser.Thing] = map[uint64]bool{}
			}
			for _, sm := range ser.Samples {
				f.seen[ser.Thing][sm.Seq] = true
			}
		}
	}
}

// count is how many distinct sample seqs of thing were read so far.
func (f *streamFollower) count(thing string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen[thing])
}

// finish reads to the end of every shard and returns the sample seqs per
// thing. Call it once nothing more is written.
func (f *streamFollower) finish() (map[string]map[uint64]bool, []string, error) {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen, f.bad, f.err
}

// rejectLog records ingest's rejections by kind and reason.
type rejectLog struct {
	ingest.NopObserver
	mu sync.Mutex
	n  map[string]int
}

func (r *rejectLog) Rejected(kind string, reason ingest.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[kind+"/"+string(reason)]++
}

func (r *rejectLog) reasons() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}
