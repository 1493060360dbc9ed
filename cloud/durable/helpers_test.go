package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
)

// t0 is the tests' start: every clock counts from it.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// clock is a settable wall clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// fakeDB is an in-memory table with the conditions the consumer uses.
type fakeDB struct {
	mu     sync.Mutex
	items  map[[2]string]map[string]types.AttributeValue
	gets   int
	puts   map[string]int // by pk prefix: "GW#", "ROLLUP#"
	getsBy map[string]int // likewise
	// landThenConflict makes the next put land and answer
	// ConditionalCheckFailed: what the SDK's retry of a put whose answer
	// was lost sees.
	// Set to a pk prefix, it applies to the next put of that prefix.
	landThenConflict string
	// landThenFail likewise makes the next put land and answer an error
	// (a timeout after DynamoDB wrote the row).
	landThenFail string
	fail         error
	// rewrites counts puts of a ROLLUP# row that exists.
	rewrites int
}

func newFakeDB() *fakeDB {
	return &fakeDB{items: map[[2]string]map[string]types.AttributeValue{}, puts: map[string]int{}, getsBy: map[string]int{}}
}

func str(m map[string]types.AttributeValue, k string) string {
	if v, ok := m[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	if v, ok := m[k].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

func (f *fakeDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	pk := str(in.Key, "pk")
	f.getsBy[pk[:strings.IndexByte(pk, '#')+1]]++
	if f.fail != nil {
		return nil, f.fail
	}
	return &dynamodb.GetItemOutput{Item: f.items[[2]string{str(in.Key, "pk"), str(in.Key, "sk")}]}, nil
}

func (f *fakeDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pk := str(in.Item, "pk")
	f.puts[pk[:strings.IndexByte(pk, '#')+1]]++
	if f.fail != nil {
		return nil, f.fail
	}
	k := [2]string{pk, str(in.Item, "sk")}
	cur, exists := f.items[k]
	if exists && strings.HasPrefix(pk, rollupPKPrefix) {
		f.rewrites++
	}
	switch cond := aws.ToString(in.ConditionExpression); cond {
	case "":
	case "attribute_not_exists(pk)":
		if exists {
			return nil, &types.ConditionalCheckFailedException{Message: aws.String("exists")}
		}
	case "version = :v":
		if !exists || str(cur, "version") != str(in.ExpressionAttributeValues, ":v") {
			return nil, &types.ConditionalCheckFailedException{Message: aws.String("version")}
		}
	default:
		return nil, fmt.Errorf("fakeDB: condition %q not supported", cond)
	}
	f.items[k] = in.Item
	if f.landThenFail != "" && strings.HasPrefix(pk, f.landThenFail) {
		f.landThenFail = ""
		return nil, context.DeadlineExceeded
	}
	if f.landThenConflict != "" && strings.HasPrefix(pk, f.landThenConflict) {
		f.landThenConflict = ""
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("retried after landing")}
	}
	return &dynamodb.PutItemOutput{}, nil
}

func (f *fakeDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if aws.ToString(in.KeyConditionExpression) != "pk = :pk AND sk BETWEEN :from AND :to" {
		return nil, fmt.Errorf("fakeDB: key condition %q not supported", aws.ToString(in.KeyConditionExpression))
	}
	pk, from, to := str(in.ExpressionAttributeValues, ":pk"), str(in.ExpressionAttributeValues, ":from"), str(in.ExpressionAttributeValues, ":to")
	var out []map[string]types.AttributeValue
	for k, it := range f.items {
		if k[0] == pk && k[1] >= from && k[1] <= to {
			out = append(out, it)
		}
	}
	sort.Slice(out, func(i, j int) bool { return str(out[i], "sk") < str(out[j], "sk") })
	return &dynamodb.QueryOutput{Items: out}, nil
}

func (f *fakeDB) statePuts() int  { f.mu.Lock(); defer f.mu.Unlock(); return f.puts[statePKPrefix] }
func (f *fakeDB) stateGets() int  { f.mu.Lock(); defer f.mu.Unlock(); return f.getsBy[statePKPrefix] }
func (f *fakeDB) rollupPuts() int { f.mu.Lock(); defer f.mu.Unlock(); return f.puts[rollupPKPrefix] }

// fakeDevices is a registry: thing -> tenant.
type fakeDevices struct {
	mu     sync.Mutex
	things map[string]string
	fail   error
}

func (d *fakeDevices) Lookup(_ context.Context, thing string) (devices.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail != nil {
		return devices.Device{}, d.fail
	}
	t, ok := d.things[thing]
	if !ok {
		return devices.Device{}, fmt.Errorf("thing %q: %w", thing, devices.ErrUnknownDevice)
	}
	return devices.Device{Thing: thing, Tenant: t}, nil
}

// fakeLetters keeps letters.
type fakeLetters struct {
	mu      sync.Mutex
	letters []deadletter.Letter
	fail    error
}

func (l *fakeLetters) Record(_ context.Context, x deadletter.Letter) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.letters = append(l.letters, x)
	return nil
}

func (l *fakeLetters) RecordPoison(ctx context.Context, x deadletter.Letter) error {
	x.Poison = true
	return l.Record(ctx, x)
}

func (l *fakeLetters) all() []deadletter.Letter {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]deadletter.Letter(nil), l.letters...)
}

// fakePublisher keeps published messages.
type fakePublisher struct {
	mu   sync.Mutex
	msgs []published
	fail error
}

type published struct {
	topic   string
	payload []byte
	qos     int
}

func (p *fakePublisher) Publish(_ context.Context, topic string, payload []byte, qos int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.msgs = append(p.msgs, published{topic, payload, qos})
	return nil
}

// acks decodes every published ack.
func (p *fakePublisher) acks(t *testing.T) []wire.AckMessage {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []wire.AckMessage
	for _, m := range p.msgs {
		a, err := wire.DecodeAck(m.payload)
		if err != nil {
			t.Fatalf("published ack on %s does not decode: %v", m.topic, err)
		}
		out = append(out, a)
	}
	return out
}

// fakeEmitter keeps events, once per idempotency key.
type fakeEmitter struct {
	mu     sync.Mutex
	events []engine.Event
	keys   map[string]bool
	fail   error
}

func (e *fakeEmitter) EmitEvent(ctx context.Context, ev engine.Event) (engine.Envelope, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		return engine.Envelope{}, e.fail
	}
	if e.keys == nil {
		e.keys = map[string]bool{}
	}
	if e.keys[ev.IdempotencyKey] {
		return engine.Envelope{}, fmt.Errorf("key %s: %w", ev.IdempotencyKey, engine.ErrDuplicate)
	}
	if _, ok := engine.Tenant(ctx); !ok {
		return engine.Envelope{}, errors.New("fakeEmitter: no tenant in context")
	}
	e.keys[ev.IdempotencyKey] = true
	e.events = append(e.events, ev)
	return engine.Envelope{}, nil
}

func (e *fakeEmitter) gaps() []catalog.DataGap {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []catalog.DataGap
	for _, ev := range e.events {
		out = append(out, ev.Payload.(catalog.DataGap))
	}
	return out
}

// countObserver counts what the consumer reports.
type countObserver struct {
	NopObserver
	mu                                  sync.Mutex
	samples, dups, gaps, acks, clockFix int
	conflicts                           int
	rejected                            map[Reason]int
}

func (o *countObserver) StateWrite(out string) {
	o.mu.Lock()
	if out == "conflict" {
		o.conflicts++
	}
	o.mu.Unlock()
}
func (o *countObserver) RollupWrite(out string) { o.StateWrite(out) }
func (o *countObserver) Samples(n int)          { o.mu.Lock(); o.samples += n; o.mu.Unlock() }
func (o *countObserver) Duplicates(n int)       { o.mu.Lock(); o.dups += n; o.mu.Unlock() }
func (o *countObserver) GapRaised()             { o.mu.Lock(); o.gaps++; o.mu.Unlock() }
func (o *countObserver) ClockFixed(string)      { o.mu.Lock(); o.clockFix++; o.mu.Unlock() }
func (o *countObserver) Ack(out string) {
	o.mu.Lock()
	if out == "ok" {
		o.acks++
	}
	o.mu.Unlock()
}
func (o *countObserver) Rejected(r Reason, _ bool) {
	o.mu.Lock()
	if o.rejected == nil {
		o.rejected = map[Reason]int{}
	}
	o.rejected[r]++
	o.mu.Unlock()
}

// rig is a Consumer on fakes.
type rig struct {
	c       *Consumer
	db      *fakeDB
	devs    *fakeDevices
	letters *fakeLetters
	pub     *fakePublisher
	emit    *fakeEmitter
	obs     *countObserver
	clock   *clock
	seq     int
}

const tenant = "acme"

// newRig returns a consumer on fakes; gateways gw-1 (bowls gw-1:a,
// gw-1:b) and gw-2 (gw-2:a) are acme's, gw-9:a is other-co's.
func newRig(t *testing.T, edit func(*Config)) *rig {
	t.Helper()
	r := &rig{db: newFakeDB(), letters: &fakeLetters{}, pub: &fakePublisher{}, emit: &fakeEmitter{}, obs: &countObserver{}, clock: &clock{t: t0},
		devs: &fakeDevices{things: map[string]string{"gw-1": tenant, "gw-1:a": tenant, "gw-1:b": tenant, "gw-2": tenant, "gw-2:a": tenant, "gw-9:a": "other-co"}}}
	r.c = r.consumer(t, r.db, edit)
	return r
}

// consumer returns another consumer of r's fakes on db (a second process).
func (r *rig) consumer(t *testing.T, db DynamoAPI, edit func(*Config)) *Consumer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DB, cfg.Table, cfg.Devices, cfg.Letters, cfg.Publisher, cfg.Emitter = db, "telemetry_state", r.devs, r.letters, r.pub, r.emit
	cfg.Observer, cfg.Now, cfg.Logger = r.obs, r.clock.Now, testLogger(t)
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// handle hands recs to the consumer and fails the test on an error.
func (r *rig) handle(t *testing.T, c *Consumer, recs ...Record) Result {
	t.Helper()
	res, err := c.Handle(context.Background(), recs)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	return res
}

// record wraps payload in record format 2 for gw of tenant, received at
// recv.
func (r *rig) record(t *testing.T, tnt, gw string, recv time.Time, payload []byte) Record {
	t.Helper()
	r.seq++
	data, err := json.Marshal(envelope{V: RecordVersion, Tenant: tnt, Gateway: gw, ReceivedAt: recv.UnixMilli(), Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	return Record{Data: data, PartitionKey: gw, SequenceNumber: fmt.Sprintf("%020d", r.seq), ShardID: "shardId-000000000000", ArrivalTime: recv}
}

// weights is a series of thing: seqs from..to, one weight_g sample a
// second from at, value 100 + seq grams.
func weights(thing string, from, to uint64, at time.Time) batch.Series {
	s := batch.Series{Thing: thing}
	for q := from; q <= to; q++ {
		s.Samples = append(s.Samples, batch.Sample{Seq: q, At: at.Add(time.Duration(q-from) * time.Second), Kind: KindWeight, Value: int64(100+q) * 1000, Scale: 3})
	}
	return s
}

// encode encodes a batch of outbox sent at sentAt.
func encode(t testing.TB, outbox string, sentAt time.Time, things ...batch.Series) []byte {
	t.Helper()
	p, err := batch.Encode(batch.Batch{Outbox: outbox, SentAt: sentAt, Things: things})
	if err != nil {
		t.Fatalf("batch.Encode: %v", err)
	}
	return p
}

// v1 encodes a v1 telemetry message of thing, seqs from..to.
func v1(t testing.TB, thing string, from, to uint64, at time.Time) []byte {
	t.Helper()
	m := wire.TelemetryMessage{V: wire.Version, Thing: thing, Seq: from, SentAt: at}
	for q := from; q <= to; q++ {
		m.Samples = append(m.Samples, wire.Sample{T: at.Add(time.Duration(q-from) * time.Second), Kind: KindWeight, Value: float64(100 + q)})
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ackedRanges is the union of every published ack's ranges per thing.
func ackedRanges(t *testing.T, p *fakePublisher, outbox string) map[string]spanSet {
	t.Helper()
	out := map[string]spanSet{}
	for _, a := range p.acks(t) {
		if a.Outbox != outbox {
			continue
		}
		for thing, rs := range a.Things {
			for _, r := range rs {
				out[thing] = out[thing].add(r.First, r.Last)
			}
		}
	}
	return out
}
