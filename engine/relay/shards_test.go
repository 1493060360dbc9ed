package relay

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/internal/testkit"
)

// The shard-walking rules are pure logic; these tests drive them with
// in-memory fakes of Streams, SQS and the checkpoint table (the emulator
// cannot be made to split shards, trim, or expire iterators on demand).

// fakeStream is a stream of shards, each a list of event records; a shard
// with closed=true ends (NextShardIterator nil) after its records.
type fakeStream struct {
	mu          sync.Mutex
	shards      []fakeShard
	expireOnce  map[string]bool // shard -> next GetRecords fails with ExpiredIterator
	readOrder   []string        // shard ids in the order their first record was read
	firstReadAt map[string]bool
}

type fakeShard struct {
	id, parent string
	seqs       []int
	closed     bool
}

// iterators are "shard|position".
func (f *fakeStream) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var shards []streamtypes.Shard
	for _, s := range f.shards {
		sh := streamtypes.Shard{ShardId: aws.String(s.id)}
		if s.parent != "" {
			sh.ParentShardId = aws.String(s.parent)
		}
		shards = append(shards, sh)
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: &streamtypes.StreamDescription{Shards: shards}}, nil
}

func (f *fakeStream) shard(id string) fakeShard {
	for _, s := range f.shards {
		if s.id == id {
			return s
		}
	}
	panic("no shard " + id)
}

func (f *fakeStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.shard(*in.ShardId)
	pos := 0
	if in.ShardIteratorType == streamtypes.ShardIteratorTypeAfterSequenceNumber {
		after, _ := strconv.Atoi(*in.SequenceNumber)
		for pos < len(s.seqs) && s.seqs[pos] <= after {
			pos++
		}
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprintf("%s|%d", s.id, pos))}, nil
}

func (f *fakeStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, p, _ := strings.Cut(*in.ShardIterator, "|")
	pos, _ := strconv.Atoi(p)
	if f.expireOnce[id] {
		delete(f.expireOnce, id)
		return nil, &streamtypes.ExpiredIteratorException{Message: aws.String("expired")}
	}
	s := f.shard(id)
	end := min(pos+2, len(s.seqs)) // small pages, to exercise checkpoints
	var recs []streamtypes.Record
	for _, n := range s.seqs[pos:end] {
		if !f.firstReadAt[id] {
			f.firstReadAt[id] = true
			f.readOrder = append(f.readOrder, id)
		}
		recs = append(recs, eventRecord(n))
	}
	out := &dynamodbstreams.GetRecordsOutput{Records: recs}
	if !(s.closed && end == len(s.seqs)) {
		out.NextShardIterator = aws.String(fmt.Sprintf("%s|%d", id, end))
	}
	return out, nil
}

func eventRecord(n int) streamtypes.Record {
	seq := strconv.Itoa(n)
	return streamtypes.Record{
		EventID: aws.String("ev" + seq), EventName: streamtypes.OperationTypeInsert,
		Dynamodb: &streamtypes.StreamRecord{SequenceNumber: aws.String(seq), Keys: map[string]streamtypes.AttributeValue{
			"pk": &streamtypes.AttributeValueMemberS{Value: "TENANT#t1#EVENT"},
		}, NewImage: map[string]streamtypes.AttributeValue{
			"pk":     &streamtypes.AttributeValueMemberS{Value: "TENANT#t1#EVENT"},
			"id":     &streamtypes.AttributeValueMemberS{Value: "id" + seq},
			"tenant": &streamtypes.AttributeValueMemberS{Value: "t1"},
		}},
	}
}

// fakeQueue records dedup ids in arrival order.
type fakeQueue struct {
	mu  sync.Mutex
	ids []string
}

func (q *fakeQueue) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		q.ids = append(q.ids, *e.MessageDeduplicationId)
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (q *fakeQueue) got() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.ids...)
}

// fakeTable is an in-memory checkpoint table.
type fakeTable struct {
	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue
}

func (t *fakeTable) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: t.items[in.Key["pk"].(*types.AttributeValueMemberS).Value]}, nil
}

func (t *fakeTable) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.items[in.Item["pk"].(*types.AttributeValueMemberS).Value] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

func runUntil(t *testing.T, r *Relay, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	finished := make(chan error, 1)
	go func() { finished <- r.Run(ctx) }()
	testkit.WaitFor(t, "the relay", 30*time.Second, done)
	cancel()
	if err := <-finished; err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
}

func newFakeRelay(t *testing.T, s *fakeStream, q *fakeQueue, cp *fakeTable) *Relay {
	t.Helper()
	r, err := New(Config{Pipe: EventsPipe, Streams: s, StreamARN: "arn:stream", Queue: q, QueueURL: "q",
		Checkpoints: cp, CheckpointTable: "inbox", PollInterval: time.Millisecond, ShardRefresh: 5 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestShardsParentsBeforeChildrenAndClosedShards: a closed parent is read
// to its end before its child starts; the parent's checkpoint says closed;
// an expired iterator is renewed from the checkpoint without loss or
// repeats.
func TestShardsParentsBeforeChildrenAndClosedShards(t *testing.T) {
	s := &fakeStream{
		shards: []fakeShard{
			{id: "child", parent: "parent", seqs: []int{6, 7, 8}},
			{id: "parent", seqs: []int{1, 2, 3, 4, 5}, closed: true},
		},
		expireOnce:  map[string]bool{"parent": true},
		firstReadAt: map[string]bool{},
	}
	q := &fakeQueue{}
	cp := &fakeTable{items: map[string]map[string]types.AttributeValue{}}
	runUntil(t, newFakeRelay(t, s, q, cp), func() bool { return len(q.got()) >= 8 })
	want := []string{"id1", "id2", "id3", "id4", "id5", "id6", "id7", "id8"}
	if got := q.got(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sent %v; want %v (parent fully before child, no repeats)", got, want)
	}
	if fmt.Sprint(s.readOrder) != "[parent child]" {
		t.Errorf("read order %v; want [parent child]", s.readOrder)
	}
	parent := cp.items[CheckpointKey("events", "arn:stream", "parent")]
	if c, _ := parent["closed"].(*types.AttributeValueMemberBOOL); c == nil || !c.Value {
		t.Errorf("parent checkpoint = %v; want closed", parent)
	}
}

// TestResumeFromCheckpoint: a relay restarted on the same checkpoints
// sends only what came after them.
func TestResumeFromCheckpoint(t *testing.T) {
	s := &fakeStream{shards: []fakeShard{{id: "s1", seqs: []int{1, 2, 3}}}, expireOnce: map[string]bool{}, firstReadAt: map[string]bool{}}
	cp := &fakeTable{items: map[string]map[string]types.AttributeValue{}}
	q1 := &fakeQueue{}
	runUntil(t, newFakeRelay(t, s, q1, cp), func() bool {
		cp.mu.Lock()
		defer cp.mu.Unlock()
		seq, _ := cp.items[CheckpointKey("events", "arn:stream", "s1")]["seq"].(*types.AttributeValueMemberS)
		return seq != nil && seq.Value == "3"
	})
	if got := q1.got(); fmt.Sprint(got) != "[id1 id2 id3]" {
		t.Fatalf("first run sent %v; want [id1 id2 id3]", got)
	}
	s.mu.Lock()
	s.shards[0].seqs = append(s.shards[0].seqs, 4, 5)
	s.mu.Unlock()
	q2 := &fakeQueue{}
	runUntil(t, newFakeRelay(t, s, q2, cp), func() bool { return len(q2.got()) == 2 })
	if got := q2.got(); fmt.Sprint(got) != "[id4 id5]" {
		t.Errorf("after restart sent %v; want [id4 id5]", got)
	}
}

// countObs counts transform failures and forwards.
type countObs struct {
	NopObserver
	mu                          sync.Mutex
	failed, forwarded, filtered int
}

func (o *countObs) TransformFailed() { o.mu.Lock(); o.failed++; o.mu.Unlock() }
func (o *countObs) Forwarded(n int)  { o.mu.Lock(); o.forwarded += n; o.mu.Unlock() }
func (o *countObs) Filtered(n int)   { o.mu.Lock(); o.filtered += n; o.mu.Unlock() }

// unresolvable is a stream whose second record is an event row without a
// tenant: the filter accepts it, the transform cannot resolve it.
type unresolvable struct{ *fakeStream }

func (u unresolvable) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	out, err := u.fakeStream.GetRecords(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	for i, r := range out.Records {
		if aws.ToString(r.Dynamodb.SequenceNumber) == "2" {
			delete(out.Records[i].Dynamodb.NewImage, "tenant")
		}
		if aws.ToString(r.Dynamodb.SequenceNumber) == "3" {
			out.Records[i].Dynamodb.NewImage["pk"] = &streamtypes.AttributeValueMemberS{Value: "TENANT#t1#HEAD"}
		}
	}
	return out, nil
}

// TestUnresolvableRecordIsCountedNotSilent: a record the filter accepts
// but the transform cannot resolve is counted (and logged at error level);
// the records around it still go through; a head row is filtered.
func TestUnresolvableRecordIsCountedNotSilent(t *testing.T) {
	s := &fakeStream{shards: []fakeShard{{id: "s1", seqs: []int{1, 2, 3, 4}}}, expireOnce: map[string]bool{}, firstReadAt: map[string]bool{}}
	q := &fakeQueue{}
	obs := &countObs{}
	r, err := New(Config{Pipe: EventsPipe, Streams: unresolvable{s}, StreamARN: "arn:stream", Queue: q, QueueURL: "q",
		Checkpoints: &fakeTable{items: map[string]map[string]types.AttributeValue{}}, CheckpointTable: "inbox",
		PollInterval: time.Millisecond, Logger: slog.New(slog.DiscardHandler), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, r, func() bool { return len(q.got()) >= 2 })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if got := q.got(); fmt.Sprint(got) != "[id1 id4]" || obs.failed != 1 || obs.filtered != 1 {
		t.Errorf("sent %v, transform failures %d, filtered %d; want [id1 id4], 1, 1", got, obs.failed, obs.filtered)
	}
}

// trimmedAt is a stream whose GetRecords answers TrimmedDataAccessException
// once per shard whose iterator is at the given position ("shard|pos"), the
// way DynamoDB Local answers the first read of a new, empty shard.
type trimmedAt struct {
	*fakeStream
	iter string
	done bool
}

func (s *trimmedAt) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	s.mu.Lock()
	hit := !s.done && *in.ShardIterator == s.iter
	if hit {
		s.done = true
	}
	s.mu.Unlock()
	if hit {
		return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("The operation attempted to read past the oldest stream record in a shard.")}
	}
	return s.fakeStream.GetRecords(ctx, in, opts...)
}

// levelCount counts log records at or above Warn.
type levelCount struct {
	mu    sync.Mutex
	warns []string
}

func (c *levelCount) Enabled(context.Context, slog.Level) bool { return true }
func (c *levelCount) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		c.mu.Lock()
		c.warns = append(c.warns, r.Message)
		c.mu.Unlock()
	}
	return nil
}
func (c *levelCount) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *levelCount) WithGroup(string) slog.Handler      { return c }

// TestTrimmedAtTheHorizonIsQuiet: a trimmed answer before the shard's
// first checkpoint (DynamoDB Local's start-up quirk, docs/local-stack.md)
// renews the iterator without a warning and loses nothing; one after a
// checkpoint, where records may really be gone, still warns.
func TestTrimmedAtTheHorizonIsQuiet(t *testing.T) {
	for _, tt := range []struct {
		name, iter string
		wantWarn   bool
	}{{"before any checkpoint", "s1|0", false}, {"after a checkpoint", "s1|2", true}} {
		t.Run(tt.name, func(t *testing.T) {
			s := &trimmedAt{fakeStream: &fakeStream{shards: []fakeShard{{id: "s1", seqs: []int{1, 2, 3, 4}}}, expireOnce: map[string]bool{}, firstReadAt: map[string]bool{}}, iter: tt.iter}
			q := &fakeQueue{}
			logs := &levelCount{}
			r, err := New(Config{Pipe: EventsPipe, Streams: s, StreamARN: "arn:stream", Queue: q, QueueURL: "q",
				Checkpoints: &fakeTable{items: map[string]map[string]types.AttributeValue{}}, CheckpointTable: "inbox",
				PollInterval: time.Millisecond, ShardRefresh: 5 * time.Millisecond, Logger: slog.New(logs)})
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, r, func() bool { return len(q.got()) >= 4 })
			if got := q.got(); fmt.Sprint(got) != "[id1 id2 id3 id4]" {
				t.Errorf("sent %v; want [id1 id2 id3 id4]", got)
			}
			logs.mu.Lock()
			defer logs.mu.Unlock()
			if s.done != true || (len(logs.warns) > 0) != tt.wantWarn {
				t.Errorf("trimmed answered %v; warnings %q; want a warning: %v", s.done, logs.warns, tt.wantWarn)
			}
		})
	}
}
