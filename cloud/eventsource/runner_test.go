package eventsource_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/internal/testkit"
)

// Four shards, two sub-streams each: every record is handled, each key's
// records in order, no batch larger than BatchSize or mixing shards.
func TestFourShardsEveryRecordInKeyOrder(t *testing.T) {
	e := newEnv(t, 4)
	const keys, per = 16, 15
	want := map[string]int{}
	for n := range per {
		for k := range keys {
			e.put(keyName(k), n)
			want[keyName(k)] = per
		}
	}
	var h handled
	spec := e.spec()
	e.runner(spec, func(ctx context.Context, recs []eventsource.Record) (string, error) {
		h.add(recs)
		return "", nil
	})
	testkit.WaitFor(t, "every record handled", 60*time.Second, func() bool { return h.distinct() == keys*per })
	h.checkKeyOrder(t, want)
	shards := map[string]bool{}
	for _, b := range h.batch {
		if len(b) > spec.BatchSize {
			t.Errorf("batch of %d records; want at most BatchSize %d", len(b), spec.BatchSize)
		}
		for _, r := range b {
			if r.ShardID != b[0].ShardID {
				t.Errorf("batch mixes shards %s and %s", b[0].ShardID, r.ShardID)
			}
			shards[r.ShardID] = true
		}
	}
	if len(shards) != 4 {
		t.Errorf("records came from %d shards; want 4", len(shards))
	}
}

// A reshard under traffic (UpdateShardCount 4 -> 8, each parent split in
// two): every record is handled at least once, each key in order, and no
// child shard's record is handled before its parent was read to the end.
func TestReshardUnderTrafficKeepsParentsBeforeChildren(t *testing.T) {
	reshardUnderTraffic(t, func(e *env) {
		if _, err := e.kin.UpdateShardCount(t.Context(), &kinesis.UpdateShardCountInput{
			StreamName: aws.String(e.stream), TargetShardCount: aws.Int32(8), ScalingType: ktypes.ScalingTypeUniformScaling,
		}); err != nil {
			t.Fatalf("UpdateShardCount: %v", err)
		}
	}, 12, 8)
}

// A merge under traffic (MergeShards of two adjacent shards of four): the
// child is handled only after both parents were read to the end.
func TestMergeUnderTrafficWaitsForBothParents(t *testing.T) {
	reshardUnderTraffic(t, func(e *env) {
		out, err := e.kin.ListShards(t.Context(), &kinesis.ListShardsInput{StreamName: aws.String(e.stream)})
		if err != nil {
			t.Fatal(err)
		}
		// Shards are created over adjacent hash ranges in order.
		if _, err := e.kin.MergeShards(t.Context(), &kinesis.MergeShardsInput{
			StreamName: aws.String(e.stream), ShardToMerge: out.Shards[0].ShardId, AdjacentShardToMerge: out.Shards[1].ShardId,
		}); err != nil {
			t.Fatalf("MergeShards: %v", err)
		}
	}, 5, 1)
}

// reshardUnderTraffic writes to a 4-shard stream while reshard runs and
// checks that every record was handled, each key in order, and that no
// child shard (of the wantChildren, wantShards in all) was handed over
// before each of its parents was done.
func reshardUnderTraffic(t *testing.T, reshard func(*env), wantShards, wantChildren int) {
	e := newEnv(t, 4)
	const keys = 12
	var h handled
	e.runner(e.spec(), func(ctx context.Context, recs []eventsource.Record) (string, error) {
		h.add(recs)
		return "", nil
	})
	var (
		mu   sync.Mutex
		sent = map[string]int{}
	)
	stopTraffic := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stopTraffic:
				return
			default:
			}
			for k := range keys {
				if _, err := e.kin.PutRecord(context.Background(), &kinesis.PutRecordInput{
					StreamName: aws.String(e.stream), PartitionKey: aws.String(keyName(k)), Data: []byte(keyName(k) + ":" + strconv.Itoa(n)),
				}); err != nil {
					t.Errorf("put during reshard: %v", err)
					return
				}
				mu.Lock()
				sent[keyName(k)] = n + 1
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	testkit.WaitFor(t, "traffic handled before the reshard", 30*time.Second, func() bool { return h.count() > 50 })
	reshard(e)
	e.waitActive()
	time.Sleep(2 * time.Second) // traffic into the children
	close(stopTraffic)
	wg.Wait()
	mu.Lock()
	total := 0
	for _, n := range sent {
		total += n
	}
	mu.Unlock()
	testkit.WaitFor(t, "every record handled", 60*time.Second, func() bool { return h.distinct() == total })
	h.checkKeyOrder(t, sent)

	out, err := e.kin.ListShards(t.Context(), &kinesis.ListShardsInput{StreamName: aws.String(e.stream)})
	if err != nil {
		t.Fatal(err)
	}
	first, last := map[string]int{}, map[string]int{}
	h.mu.Lock()
	for i, r := range h.order {
		if _, ok := first[r.ShardID]; !ok {
			first[r.ShardID] = i
		}
		last[r.ShardID] = i
	}
	h.mu.Unlock()
	children, used := 0, 0
	for _, sh := range out.Shards {
		id := aws.ToString(sh.ShardId)
		parents := []string{aws.ToString(sh.ParentShardId), aws.ToString(sh.AdjacentParentShardId)}
		if parents[0] == "" {
			continue
		}
		children++
		c, ok := first[id]
		if !ok {
			continue
		}
		used++
		for _, parent := range parents {
			if p, ok := last[parent]; ok && parent != "" && c < p {
				t.Errorf("child shard %s handled (at %d) before its parent %s was done (last at %d)", id, c, parent, p)
			}
		}
	}
	if len(out.Shards) != wantShards || children != wantChildren {
		t.Errorf("after the reshard %d shards, %d children; want %d and %d", len(out.Shards), children, wantShards, wantChildren)
	}
	if used == 0 {
		t.Error("no record of a child shard was handled; the reshard saw no traffic")
	}
}

// A handler that fails part of a batch once gets the batch again from
// exactly the failed record: nothing before it again, nothing skipped.
func TestPartialFailureRetriesFromFailedSequence(t *testing.T) {
	e := newEnv(t, 1)
	var seqs []string
	for n := range 20 {
		seqs = append(seqs, e.put("gw-a", n))
	}
	failAt := seqs[13]
	var (
		h       handled
		failed  bool
		mu      sync.Mutex
		after   []eventsource.Record
		tailLen int // records of the failed batch from the failed one on
	)
	spec := e.spec()
	spec.ParallelizationFactor = 1
	e.runner(spec, func(ctx context.Context, recs []eventsource.Record) (string, error) {
		h.add(recs)
		mu.Lock()
		defer mu.Unlock()
		if failed && after == nil {
			after = recs
		}
		for i, r := range recs {
			if r.SequenceNumber == failAt && !failed {
				failed, tailLen = true, len(recs)-i
				return failAt, nil
			}
		}
		return "", nil
	})
	// The failed batch's records were handed over before it failed: wait
	// for the retry too.
	testkit.WaitFor(t, "every record handled and the failed tail retried", 30*time.Second, func() bool {
		mu.Lock()
		retried := after != nil
		mu.Unlock()
		return retried && h.distinct() == 20
	})
	time.Sleep(500 * time.Millisecond) // any redelivery beyond the tail would show by now
	h.checkKeyOrder(t, map[string]int{"gw-a": 20})
	mu.Lock()
	defer mu.Unlock()
	if len(after) == 0 || after[0].SequenceNumber != failAt {
		t.Fatalf("batch after the partial failure starts at %v; want the failed seq %s", after, failAt)
	}
	// 20 once, and the failed batch's tail from the failed record again.
	if want := 20 + tailLen; h.count() != want {
		t.Errorf("%d records handed over; want %d (the failed record and the rest of its batch again, nothing before it)", h.count(), want)
	}
}

// A record that always fails is bisected down to itself, retried
// MaximumRetryAttempts times, described on the on-failure queue, and the
// shard moves on past it.
func TestPoisonRecordGoesToOnFailureQueueAndShardMovesOn(t *testing.T) {
	e := newEnv(t, 1)
	var poison string
	for n := range 30 {
		s := e.put("gw-p", n)
		if n == 7 {
			poison = s
		}
	}
	var (
		h       handled
		mu      sync.Mutex
		tries   int
		errPois = errors.New("poison")
	)
	spec := e.spec()
	e.runner(spec, func(ctx context.Context, recs []eventsource.Record) (string, error) {
		for _, r := range recs {
			if r.SequenceNumber == poison {
				mu.Lock()
				tries++
				mu.Unlock()
				return "", errPois
			}
		}
		h.add(recs)
		return "", nil
	})
	testkit.WaitFor(t, "every other record handled", 30*time.Second, func() bool { return h.distinct() == 29 })
	var got []eventsource.FailureRecord
	testkit.WaitFor(t, "a failure record", 30*time.Second, func() bool {
		got = append(got, e.failures(spec.Name)...)
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("%d failure records; want 1", len(got))
	}
	fr := got[0]
	bi := fr.KinesisBatchInfo
	if fr.RequestContext.Condition != eventsource.ConditionRetryAttemptsExhausted || bi.StartSequenceNumber != poison || bi.EndSequenceNumber != poison || bi.BatchSize != 1 {
		t.Errorf("failure record %+v; want RetryAttemptsExhausted for the poison record %s alone", fr, poison)
	}
	if bi.ShardID == "" || fr.LastError == "" {
		t.Errorf("failure record %+v; want the shard and the last error", fr)
	}
	mu.Lock()
	defer mu.Unlock()
	// A batch of 10 bisects to 5, 3 (or 2), 2, 1: the batches holding the
	// poison fail, then the poison alone is tried 1+MaximumRetryAttempts times.
	if minTries := 1 + spec.MaximumRetryAttempts; tries < minTries || tries > minTries+4 {
		t.Errorf("poison handed over %d times; want %d (alone) plus the bisect steps", tries, minTries)
	}
}

// A Runner stopped and started again resumes at its checkpoint: records
// it handled are not handed over again, and a batch whose handler never
// succeeded is (checkpoints follow success only).
func TestRestartResumesFromCheckpoint(t *testing.T) {
	e := newEnv(t, 2)
	spec := e.spec()
	for n := range 20 {
		e.put(keyName(n%4), n/4)
	}
	var first handled
	stop := e.runner(spec, func(ctx context.Context, recs []eventsource.Record) (string, error) {
		first.add(recs)
		return "", nil
	})
	testkit.WaitFor(t, "first run handled everything", 30*time.Second, func() bool { return first.distinct() == 20 })
	// Stop only once every shard's checkpoint is at its last handled record.
	lastSeq := map[string]string{}
	first.mu.Lock()
	for _, r := range first.order {
		if a, b := r.SequenceNumber, lastSeq[r.ShardID]; len(a) > len(b) || (len(a) == len(b) && a > b) {
			lastSeq[r.ShardID] = a // the highest: sub-streams interleave
		}
	}
	first.mu.Unlock()
	testkit.WaitFor(t, "checkpoints at the last handled records", 10*time.Second, func() bool {
		for shard, seq := range lastSeq {
			if e.checkpoint(spec.Name, shard) != seq {
				return false
			}
		}
		return true
	})
	stop()

	// A run whose handler always fails checkpoints nothing.
	for n := 5; n < 10; n++ {
		e.put(keyName(n%4), n/4+5)
	}
	spec.MaximumRetryAttempts = -1
	var failing handled
	stop = e.runner(spec, func(ctx context.Context, recs []eventsource.Record) (string, error) {
		failing.add(recs)
		return "", errors.New("down")
	})
	testkit.WaitFor(t, "the failing run saw the new records", 30*time.Second, func() bool { return failing.distinct() == 5 })
	stop()

	var second handled
	e.runner(spec, func(ctx context.Context, recs []eventsource.Record) (string, error) {
		second.add(recs)
		return "", nil
	})
	testkit.WaitFor(t, "second run handled the new records", 30*time.Second, func() bool { return second.distinct() == 5 })
	time.Sleep(time.Second)
	if n := second.count(); n != 5 {
		t.Errorf("second run handled %d records; want only the 5 new ones (the first run's are checkpointed)", n)
	}
}

// Records older than MaximumRecordAgeInSeconds go to the on-failure
// queue as RecordAgeExceeded without reaching the handler, and the shard
// is checkpointed past them.
func TestOldRecordsGoToOnFailureQueueUnhandled(t *testing.T) {
	e := newEnv(t, 1)
	for n := range 3 {
		e.put("gw-old", n)
	}
	spec := e.spec()
	spec.MaximumRecordAgeInSeconds = 60
	var h handled
	r, err := eventsource.New(eventsource.Config{
		Spec: spec, Kinesis: e.kin, Stream: e.stream, Checkpoints: e.ddb, CheckpointTable: e.table, OnFailure: e.sqs, OnFailureURL: e.dlq,
		Handler:      func(ctx context.Context, recs []eventsource.Record) (string, error) { h.add(recs); return "", nil },
		PollInterval: 200 * time.Millisecond, ShardRefresh: 300 * time.Millisecond,
		Now: func() time.Time { return time.Now().Add(2 * time.Minute) }, // the records are two minutes old
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var got []eventsource.FailureRecord
	testkit.WaitFor(t, "a failure record", 30*time.Second, func() bool {
		got = append(got, e.failures(spec.Name)...)
		return len(got) > 0
	})
	if fr := got[0]; fr.RequestContext.Condition != eventsource.ConditionRecordAgeExceeded || fr.KinesisBatchInfo.BatchSize != 3 {
		t.Errorf("failure record %+v; want RecordAgeExceeded for the 3 records", fr)
	}
	if n := h.count(); n != 0 {
		t.Errorf("handler got %d records; want none (too old)", n)
	}
}

// With a batching window, records arriving within it are handed over
// together, not one invocation per record.
func TestBatchingWindowGathersRecords(t *testing.T) {
	e := newEnv(t, 1)
	spec := e.spec()
	spec.BatchSize, spec.MaximumBatchingWindowInSeconds, spec.ParallelizationFactor = 100, 2, 1
	var h handled
	e.runner(spec, func(ctx context.Context, recs []eventsource.Record) (string, error) {
		h.add(recs)
		return "", nil
	})
	time.Sleep(500 * time.Millisecond) // the runner is reading the empty shard
	for n := range 6 {
		e.put("gw-w", n)
		time.Sleep(100 * time.Millisecond)
	}
	testkit.WaitFor(t, "every record handled", 30*time.Second, func() bool { return h.distinct() == 6 })
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.batch) > 2 {
		t.Errorf("6 records 100 ms apart came in %d batches; want at most 2 with a 2 s window", len(h.batch))
	}
}
