package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/attr"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// effects maps each subscription that calls a provider to the provider.
var effects = map[string]string{
	catalog.SubShopifyMirror: fakes.Shopify,
	catalog.SubBookShipment:  fakes.Shipping,
	catalog.SubNotifyBuyer:   fakes.Notify,
}

// telemetry is what Kinesis holds: per thing, the outbox seqs of its
// samples (whatever outbox instance sent them), and how many samples and
// records repeated one already seen by (thing, outbox, seq).
type telemetry struct {
	ranges map[string][][2]uint64
	// seen is keyed by thing, then outbox, then seq.
	seen             map[string]map[string]map[uint64]bool
	records          int
	samples          int
	duplicates       int // records with no new sample
	duplicateSamples int // samples resent or redelivered
	undecodable      int
}

// has reports whether the stream holds a sample of thing from outbox with
// a seq in [from, to].
func (t *telemetry) has(thing, outbox string, from, to uint64) bool {
	for seq := range t.seen[thing][outbox] {
		if seq >= from && seq <= to {
			return true
		}
	}
	return false
}

// readTelemetry reads the whole stream from its start, each record decoded
// as every reader of the stream decodes it (durable.DecodeRecord, record
// format 2).
func (r *run) readTelemetry(ctx context.Context) (*telemetry, error) {
	t := &telemetry{ranges: map[string][][2]uint64{}, seen: map[string]map[string]map[uint64]bool{}}
	stream := r.sc.Names.TelemetryStream()
	shards, err := r.app.Kinesis.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		return nil, fmt.Errorf("list shards of %s: %w", stream, err)
	}
	for _, sh := range shards.Shards {
		it, err := r.app.Kinesis.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream),
			ShardId: sh.ShardId, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			return nil, fmt.Errorf("shard iterator of %s: %w", aws.ToString(sh.ShardId), err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := r.app.Kinesis.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(10000)})
			if err != nil {
				return nil, fmt.Errorf("get records of %s: %w", aws.ToString(sh.ShardId), err)
			}
			for _, rec := range out.Records {
				t.add(rec.Data)
			}
			if len(out.Records) == 0 && aws.ToInt64(out.MillisBehindLatest) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return t, nil
}

// add counts one Kinesis record.
func (t *telemetry) add(data []byte) {
	rec, err := durable.DecodeRecord(data)
	if err != nil {
		t.undecodable++
		return
	}
	t.records++
	fresh := 0
	for _, series := range rec.Things {
		if t.seen[series.Thing] == nil {
			t.seen[series.Thing] = map[string]map[uint64]bool{}
		}
		seqs := t.seen[series.Thing][rec.Outbox]
		if seqs == nil {
			seqs = map[uint64]bool{}
			t.seen[series.Thing][rec.Outbox] = seqs
		}
		for _, x := range series.Samples {
			if seqs[x.Seq] {
				t.duplicateSamples++
				continue
			}
			seqs[x.Seq] = true
			fresh++
			t.samples++
			t.ranges[series.Thing] = append(t.ranges[series.Thing], [2]uint64{x.Seq, x.Seq})
		}
	}
	if fresh == 0 {
		t.duplicates++
	}
}

// missingFrames counts, per thing, the acknowledged frames (1 through the
// MCU's last cumulative ack) that no sample in Kinesis covers, reading
// frame n as the thing's outbox seq n as the harness always has: a coverage
// check of the seq line, since a frame gives one or more telemetry records
// (a weight batch one per reading) and a fault frame none. holes is the
// exact check: it finds any record an outbox held that the stream lacks.
func (r *run) missingFrames(t *telemetry) (acked, missing int, detail []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for thing, s := range r.summary {
		top := uint64(s.MCU.AckedThrough)
		acked += int(top)
		rs := slices.Clone(t.ranges[thing])
		slices.SortFunc(rs, func(a, b [2]uint64) int { return int(a[0]) - int(b[0]) })
		next := uint64(1)
		gaps := 0
		for _, rg := range rs {
			if rg[0] > next && next <= top {
				gaps += int(min(rg[0], top+1) - next)
			}
			next = max(next, rg[1]+1)
		}
		if next <= top {
			gaps += int(top + 1 - next)
		}
		if gaps > 0 {
			missing += gaps
			detail = append(detail, fmt.Sprintf("%s: %d of %d acked frames not in Kinesis", thing, gaps, top))
		}
	}
	return acked, missing, detail
}

// holes counts, per (thing, outbox), the seqs below the highest one in
// the stream that the stream lacks. An outbox numbers each thing's
// telemetry from 1 without holes, so with the outbox empty at the end (every
// record acknowledged, and acks name only seqs in the stream) no hole
// means every telemetry record the gateway ever held reached Kinesis.
func (t *telemetry) holes() (n int, detail []string) {
	for thing, outboxes := range t.seen {
		for ob, seqs := range outboxes {
			top := uint64(0)
			for s := range seqs {
				top = max(top, s)
			}
			if miss := int(top) - len(seqs); miss > 0 {
				n += miss
				detail = append(detail, fmt.Sprintf("%s outbox %s: %d of seqs 1..%d not in Kinesis", thing, ob, miss, top))
			}
		}
	}
	slices.Sort(detail)
	return n, detail
}

// readChain returns a tenant's events in chain order (strongly
// consistent reads).
func (r *run) readChain(ctx context.Context, tenant string) ([]engine.Envelope, error) {
	var out []engine.Envelope
	for env, err := range engine.NewLog(r.app.DynamoDB, r.sc.Names.EventsTable()).After(ctx, tenant, 0, engine.ReadOptions{}) {
		var row *engine.RowError
		switch {
		case errors.As(err, &row) && row.KeyMismatch():
			// Decoded: kept as it says; the chain check names the key.
		case err != nil:
			return nil, fmt.Errorf("read chain of %s: %w", tenant, err)
		}
		out = append(out, env)
	}
	return out, nil
}

// queueDepth is visible plus in-flight messages of a queue.
func (r *run) queueDepth(ctx context.Context, name string) (int, error) {
	u, err := r.app.QueueURL(ctx, name)
	if err != nil {
		return 0, err
	}
	out, err := r.app.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		return 0, fmt.Errorf("depth of %s: %w", name, err)
	}
	a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return a + b, nil
}

// inboxRows counts the inbox rows by status and lists the unfinished ones
// (pending or dead) by event id.
func (r *run) inboxRows(ctx context.Context) (map[inbox.Status]int, map[string][]string, error) {
	counts := map[inbox.Status]int{}
	open := map[string][]string{}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(r.sc.Names.InboxTable()),
		FilterExpression:          aws.String("begins_with(#pk, :p)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attr.PK},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": attr.S(inbox.KeyPrefix)},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		page, err := r.app.DynamoDB.Scan(ctx, in)
		if err != nil {
			return nil, nil, fmt.Errorf("scan inbox: %w", err)
		}
		for _, item := range page.Items {
			st := inbox.Status(attr.GetS(item, inbox.AttrStatus))
			counts[st]++
			if st != inbox.Completed {
				id, sub, _ := inbox.SplitKey(attr.GetS(item, attr.PK))
				open[id] = append(open[id], sub)
			}
		}
		if page.LastEvaluatedKey == nil {
			return counts, open, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// firstCalls returns, per Idempotency-Key, the time of the first call and
// of the first 2xx answer, and the number of calls.
func firstCalls(f *fakes.Fake) (first, firstOK map[string]time.Time, n map[string]int) {
	first, firstOK, n = map[string]time.Time{}, map[string]time.Time{}, map[string]int{}
	for _, c := range f.Calls() {
		n[c.IdempotencyKey]++
		if _, ok := first[c.IdempotencyKey]; !ok {
			first[c.IdempotencyKey] = c.At
		}
		if _, ok := firstOK[c.IdempotencyKey]; !ok && c.Status/100 == 2 {
			firstOK[c.IdempotencyKey] = c.At
		}
	}
	return first, firstOK, n
}
