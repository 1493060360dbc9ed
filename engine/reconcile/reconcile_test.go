package reconcile

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/enginetest"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/localstack"
	"github.com/bowline-iot/bowline/internal/localstack/lstest"
	"github.com/bowline-iot/bowline/internal/resources"
)

func TestMain(m *testing.M) { lstest.Main(m, localstack.DynamoDB, localstack.SQS) }

// counting is a DynamoDB client that counts what reconcile reads: event
// rows returned by queries of the events table, items a scan read, and
// inbox keys asked for by BatchGetItem.
type counting struct {
	*dynamodb.Client
	events string

	mu                          sync.Mutex
	eventRows, scanned, idemKey int
}

func (c *counting) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Client.Query(ctx, in, opts...)
	if err == nil && aws.ToString(in.TableName) == c.events {
		c.mu.Lock()
		c.eventRows += len(out.Items)
		c.mu.Unlock()
	}
	return out, err
}

func (c *counting) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out, err := c.Client.Scan(ctx, in, opts...)
	if err == nil && aws.ToString(in.TableName) == c.events {
		c.mu.Lock()
		c.scanned += int(out.ScannedCount)
		c.mu.Unlock()
	}
	return out, err
}

func (c *counting) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.mu.Lock()
	for _, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			if strings.HasPrefix(attr.GetS(k, attr.PK), "IDEMP#") {
				c.idemKey++
			}
		}
	}
	c.mu.Unlock()
	return c.Client.BatchGetItem(ctx, in, opts...)
}

// reads returns and resets the counters.
func (c *counting) reads() (eventRows, scanned, inboxKeys int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	eventRows, scanned, inboxKeys = c.eventRows, c.scanned, c.idemKey
	c.eventRows, c.scanned, c.idemKey = 0, 0, 0
	return
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	names resources.Names
	ddb   *dynamodb.Client
	db    *counting
	sqs   *sqs.Client
	dlq   string
	dl    *deadletter.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := lstest.AWSConfig(t)
	names := lstest.Names(t)
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	dl, _ := deadletter.New(ddb, names.DeadLettersTable(), nil)
	q := enginetest.FIFOQueues(t, "reconcile", 5*time.Second, 5)
	return &fixture{t: t, ctx: enginetest.Ctx(t), names: names, ddb: ddb,
		db: &counting{Client: ddb, events: names.EventsTable()}, sqs: sqs.NewFromConfig(cfg), dlq: q.DLQURL, dl: dl}
}

// subs: com.payment_completed owes two DURABLE runs.
var subs = []engine.Subscription{
	{Name: "shopify_mirror", Pattern: "com.payment_completed", Lane: engine.Durable},
	{Name: "book_shipment", Pattern: "com.payment_completed", Lane: engine.Durable},
	{Name: "audit", Pattern: "com.*", Lane: engine.BestEffort},
}

// check is the settlement check with a clock.
func (f *fixture) check(now time.Time) InboxCheck {
	return InboxCheck{DB: f.db, EventsTable: f.names.EventsTable(), InboxTable: f.names.InboxTable(),
		Subscriptions: subs, Now: func() time.Time { return now }}
}

func (f *fixture) config(now time.Time) Config {
	return Config{
		Chains: engine.NewVerifier(f.db, f.names.EventsTable(), 100), Progress: Progress{DB: f.db, Table: f.names.InboxTable()},
		DeadLetters: f.dl, Queue: f.sqs, DLQURL: f.dlq, Unsettled: f.check(now),
	}
}

// emit appends n com.payment_completed events to tenant's chain, each
// occurring at at, and returns them.
func (f *fixture) emit(tenant string, n int, at time.Time) []engine.Envelope {
	f.t.Helper()
	head, err := engine.NewVerifier(f.ddb, f.names.EventsTable(), 0).VerifyChain(f.ctx, tenant)
	if err != nil {
		f.t.Fatal(err)
	}
	prev, seq := engine.Genesis, head.Verified.Seq
	if seq > 0 {
		prev = head.Verified.Hash
	}
	var out []engine.Envelope
	for range n {
		seq++
		env := enginetest.Envelope(f.t, tenant, "com.payment_completed", seq, nil)
		env.OccurredAt = at.UTC().Truncate(time.Microsecond)
		if err := engine.Seal(&env, prev); err != nil {
			f.t.Fatal(err)
		}
		if err := enginetest.PutEventRow(f.ctx, f.ddb, f.names.EventsTable(), env); err != nil {
			f.t.Fatal(err)
		}
		prev = env.Hash
		out = append(out, env)
	}
	return out
}

// settle writes the final inbox row of (env, sub), as the worker does.
func (f *fixture) settle(env engine.Envelope, sub string, status inbox.Status) {
	f.t.Helper()
	_, err := f.ddb.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: aws.String(f.names.InboxTable()), Item: map[string]types.AttributeValue{
		"pk": attr.S(inbox.Key(env.ID, sub)), "status": attr.S(string(status)),
		"ttl": attr.N(time.Now().Add(inbox.DefaultTTL).Unix()),
	}})
	if err != nil {
		f.t.Fatal(err)
	}
}

// expire deletes the inbox row of (env, sub), as DynamoDB's TTL does.
func (f *fixture) expire(env engine.Envelope, sub string) {
	f.t.Helper()
	if _, err := f.ddb.DeleteItem(f.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.names.InboxTable()), Key: attr.HashKey(inbox.Key(env.ID, sub))}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) settleAll(envs []engine.Envelope) {
	for _, e := range envs {
		f.settle(e, "shopify_mirror", inbox.Completed)
		f.settle(e, "book_shipment", inbox.Completed)
	}
}

func (f *fixture) reconcile(cfg Config) Report {
	f.t.Helper()
	rep, err := Reconcile(f.ctx, cfg)
	if err != nil {
		f.t.Fatalf("Reconcile: %v", err)
	}
	return rep
}

func line(rep Report, tenant string) Tenant {
	for _, tr := range rep.Tenants {
		if tr.Tenant == tenant {
			return tr
		}
	}
	return Tenant{}
}

func suffix() string { return strings.ToLower(ulid.Make().String()[16:]) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReconcileReportsEveryKindOfUndoneWork: an intact tenant, a tampered
// one, an open and a redriven dead letter, a poison pill, a message in the
// DLQ and an unmatched event each show up as a number.
func TestReconcileReportsEveryKindOfUndoneWork(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	good, bad := "good-"+suffix(), "bad-"+suffix()
	f.emit(good, 1, time.Now())
	f.emit(bad, 1, time.Now())
	// Tamper with bad's only event.
	_, err := f.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(f.names.EventsTable()),
		Key:                       attr.Key(engine.EventPK(bad), engine.SeqSK(1)),
		UpdateExpression:          aws.String("SET #a = :a"),
		ExpressionAttributeNames:  map[string]string{"#a": engine.AttrActor},
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": attr.S("mallory")},
	})
	must(t, err)
	must(t, f.dl.Record(ctx, deadletter.Letter{Tenant: good, EventID: "e1", Subscription: "notify_owner", Error: "x"}))
	must(t, f.dl.Record(ctx, deadletter.Letter{Tenant: good, EventID: "e2", Subscription: "notify_owner", Error: "x"}))
	must(t, f.dl.MarkRedriven(ctx, good, "e2", "notify_owner"))
	must(t, f.dl.RecordPoison(ctx, deadletter.Letter{MessageID: "m1", Body: "??", Error: "decode"}))
	must(t, f.dl.CountUnmatched(ctx, "com.order_created"))
	_, err = f.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.dlq), MessageBody: aws.String("{}"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")})
	must(t, err)

	cfg := f.config(time.Now())
	cfg.Unsettled = nil
	rep := f.reconcile(cfg)
	if g := line(rep, good); !g.ChainIntact || g.Events != 1 || g.VerifiedSeq != 1 || g.DeadLetters != 1 {
		t.Errorf("good tenant = %+v; want intact, 1 event verified, 1 open dead letter", g)
	}
	if b := line(rep, bad); b.ChainIntact || b.FirstBadSeq != 1 {
		t.Errorf("tampered tenant = %+v; want broken at seq 1", b)
	}
	if rep.DeadLetters != 1 || rep.PoisonPills != 1 || rep.DLQDepth != 1 || rep.Unmatched != 1 || rep.OK() {
		t.Errorf("report = %+v; want 1 open dead letter, 1 poison pill, DLQ depth 1, 1 unmatched, not OK", rep)
	}
	// The break is found again on the next call: a broken chain never
	// advances its checkpoint.
	if b := line(f.reconcile(cfg), bad); b.ChainIntact || b.FirstBadSeq != 1 {
		t.Errorf("tampered tenant on the second call = %+v; want still broken at seq 1", b)
	}
}

// TestInboxCheckCountsUnsettledWork: of an event's two DURABLE
// subscriptions, one has a completed inbox row and one has none; inside the
// grace period nothing is unsettled, after it the one without is, and it
// stays so until its row completes.
func TestInboxCheckCountsUnsettledWork(t *testing.T) {
	f := newFixture(t)
	tenant := "unsettled-" + suffix()
	env := f.emit(tenant, 1, time.Now())[0]
	f.settle(env, "shopify_mirror", inbox.Completed)
	for _, c := range []struct {
		now  time.Time
		want int
	}{{time.Now(), 0}, {time.Now().Add(time.Hour), 1}, {time.Now().Add(2 * time.Hour), 1}} {
		got, err := f.check(c.now).Unsettled(f.ctx, tenant)
		must(t, err)
		if got != c.want {
			t.Errorf("Unsettled at %v = %d; want %d", c.now.Format(time.TimeOnly), got, c.want)
		}
	}
	f.settle(env, "book_shipment", inbox.Dead)
	s, err := f.check(time.Now().Add(3*time.Hour)).Settle(f.ctx, tenant)
	must(t, err)
	if s.Unsettled != 0 || s.SettledSeq != 1 {
		t.Errorf("after the missing row went dead: %+v; want 0 unsettled, settled through seq 1", s)
	}
}

// TestSettledWorkStaysSettledAfterTTLExpiry: once reconcile has seen a
// pair settled, deleting its inbox row as the TTL does later does not make
// it unsettled; a pair first seen without a row when its event is older
// than the inbox TTL is counted as expired, not unsettled; a missing row
// of a younger event is unsettled, and so is a pending one of any age.
func TestSettledWorkStaysSettledAfterTTLExpiry(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	seen := "seen-" + suffix()
	envs := f.emit(seen, 3, now.Add(-time.Hour))
	f.settleAll(envs)
	rep := f.reconcile(f.config(now))
	if l := line(rep, seen); l.Unsettled != 0 || l.SettledSeq != 3 {
		t.Fatalf("before expiry %s = %+v; want 0 unsettled, settled through 3", seen, l)
	}
	for _, e := range envs {
		f.expire(e, "shopify_mirror")
		f.expire(e, "book_shipment")
	}
	later := now.Add(inbox.DefaultTTL + time.Hour)
	rep = f.reconcile(f.config(later))
	if l := line(rep, seen); l.Unsettled != 0 || l.SettledSeq != 3 {
		t.Errorf("after the rows expired %s = %+v; want still 0 unsettled", seen, l)
	}

	// Rows gone before reconcile ever looked: old events count as expired,
	// a young event as unsettled, a pending row as unsettled.
	late := "late-" + suffix()
	old := f.emit(late, 2, later.Add(-inbox.DefaultTTL-time.Hour))
	young := f.emit(late, 1, later.Add(-time.Hour))[0]
	f.settle(old[1], "shopify_mirror", inbox.Pending)
	f.settle(young, "shopify_mirror", inbox.Completed)
	rep = f.reconcile(f.config(later))
	l := line(rep, late)
	if l.Expired != 3 || l.Unsettled != 2 || l.SettledSeq != 3 || rep.OK() {
		t.Errorf("%s = %+v; want 3 expired (old events without rows), 2 unsettled (a pending row, a young event's missing row), settled through 3, not OK", late, l)
	}
	// The unsettled pairs stay unsettled until they settle.
	f.settle(old[1], "shopify_mirror", inbox.Completed)
	f.settle(young, "book_shipment", inbox.Completed)
	rep = f.reconcile(f.config(later))
	if l := line(rep, late); l.Unsettled != 0 || l.Expired != 0 {
		t.Errorf("after they completed %s = %+v; want 0 unsettled, nothing new expired", late, l)
	}
}

// TestReconcileIsIncremental: a second call reads no event row and no
// inbox row it has already checked; new events are read once; MaxEvents
// bounds a call and the next goes on where it stopped.
func TestReconcileIsIncremental(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	tenant := "incr-" + suffix()
	f.settleAll(f.emit(tenant, 12, now.Add(-time.Hour)))

	cfg := f.config(now)
	cfg.MaxEvents = 5
	check := f.check(now)
	check.MaxEvents = 5
	cfg.Unsettled = check
	want := []struct {
		verified, settled uint64
		behind            bool
	}{{5, 5, true}, {10, 10, true}, {12, 12, false}}
	for i, w := range want {
		f.db.reads()
		l := line(f.reconcile(cfg), tenant)
		if l.VerifiedSeq != w.verified || l.SettledSeq != w.settled || l.Behind != w.behind || !l.ChainIntact || l.Unsettled != 0 {
			t.Errorf("call %d: %+v; want verified and settled through %d, behind %v, intact, 0 unsettled", i+1, l, w.verified, w.behind)
		}
	}
	// Caught up: nothing of this tenant is read again. (The events table
	// holds other tests' tenants, so count only reads that cannot be
	// theirs: this fixture's tenants are all caught up now.)
	for range 2 {
		f.reconcile(cfg)
	}
	f.db.reads()
	f.reconcile(cfg)
	if rows, _, keys := f.db.reads(); rows > 2*len(f.tenants(t)) || keys != 0 {
		t.Errorf("a call with nothing new read %d event rows and %d inbox keys; want at most the checkpoint rows and no inbox key", rows, keys)
	}
	// Three new events: read once each, by the chain and the settlement.
	f.settleAll(f.emit(tenant, 3, now.Add(-time.Minute*10)))
	f.db.reads()
	l := line(f.reconcile(cfg), tenant)
	rows, _, keys := f.db.reads()
	if l.VerifiedSeq != 15 || l.SettledSeq != 15 || keys != 6 {
		t.Errorf("after 3 new events: %+v, %d inbox keys read; want verified and settled through 15, 6 inbox keys", l, keys)
	}
	if max := 2*len(f.tenants(t)) + 2*3; rows > max {
		t.Errorf("after 3 new events a call read %d event rows; want at most %d", rows, max)
	}
}

// tenants lists the tenants the registry holds.
func (f *fixture) tenants(t *testing.T) []string {
	reg, err := Progress{DB: f.ddb, Table: f.names.InboxTable()}.Registry(f.ctx)
	must(t, err)
	return reg.Tenants
}

// TestTenantDiscoveryIsBounded: the discovery scan reads at most
// ScanBudget items per call and finds every tenant over enough calls; the
// tenants it found stay registered.
func TestTenantDiscoveryIsBounded(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	var mine []string
	for range 3 {
		tn := "disc-" + suffix()
		f.settleAll(f.emit(tn, 2, now.Add(-time.Hour)))
		mine = append(mine, tn)
	}
	cfg := f.config(now)
	cfg.ScanBudget = 4
	found := map[string]bool{}
	for call := 0; call < 500 && len(found) < len(mine); call++ {
		f.db.reads()
		rep := f.reconcile(cfg)
		if _, scanned, _ := f.db.reads(); scanned > cfg.ScanBudget {
			t.Fatalf("call %d scanned %d items; want at most %d", call, scanned, cfg.ScanBudget)
		}
		for _, tn := range mine {
			if l := line(rep, tn); l.Tenant != "" {
				found[tn] = true
				if !l.ChainIntact || l.Events != 2 {
					t.Errorf("tenant %s = %+v; want intact with 2 events", tn, l)
				}
			}
		}
	}
	if len(found) != len(mine) {
		t.Fatalf("found %d of %d tenants", len(found), len(mine))
	}
	reg := f.tenants(t)
	for _, tn := range mine {
		if !strings.Contains(strings.Join(reg, ","), tn) {
			t.Errorf("registry %v lacks %s", reg, tn)
		}
	}
}

// TestEventWithoutSubscriberIsSettled: an event whose type no DURABLE
// subscription matches owes no work. The events pipe filters such events
// out (docs/relay.md), so no worker ever sees them and no inbox row or
// UNMATCHED count is ever written; reconcile counts them settled, moves
// its watermark past them and reports nothing unmatched.
func TestEventWithoutSubscriberIsSettled(t *testing.T) {
	f := newFixture(t)
	tenant := "nosub-" + suffix()
	env := enginetest.Envelope(t, tenant, "com.order_created", 1, nil)
	env.OccurredAt = time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	must(t, engine.Seal(&env, engine.Genesis))
	must(t, enginetest.PutEventRow(f.ctx, f.ddb, f.names.EventsTable(), env))
	paid := f.emit(tenant, 1, time.Now().Add(-time.Hour))
	f.settleAll(paid)
	s, err := f.check(time.Now()).Settle(f.ctx, tenant)
	must(t, err)
	if s.Unsettled != 0 || s.SettledSeq != 2 || s.Expired != 0 {
		t.Errorf("Settle = %+v; want 0 unsettled, settled through seq 2 (the unsubscribed event owes nothing)", s)
	}
}
