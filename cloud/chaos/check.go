package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/cloud/catalog"
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

// telemetry is what Kinesis holds: per thing, the frame ranges of its
// records and how many records repeated one.
type telemetry struct {
	ranges     map[string][][2]uint64
	seen       map[string]map[uint64]bool
	samples    int
	duplicates int
}

type kinesisRecord struct {
	Thing   string            `json:"thing"`
	Seq     uint64            `json:"seq"`
	LastSeq uint64            `json:"last_seq"`
	Samples []json.RawMessage `json:"samples"`
}

// readTelemetry reads the whole stream from its start.
func (r *run) readTelemetry(ctx context.Context) (*telemetry, error) {
	t := &telemetry{ranges: map[string][][2]uint64{}, seen: map[string]map[uint64]bool{}}
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
				var kr kinesisRecord
				if json.Unmarshal(rec.Data, &kr) != nil || kr.Thing == "" {
					continue
				}
				if t.seen[kr.Thing] == nil {
					t.seen[kr.Thing] = map[uint64]bool{}
				}
				if t.seen[kr.Thing][kr.Seq] {
					t.duplicates++
					continue
				}
				t.seen[kr.Thing][kr.Seq] = true
				t.samples += len(kr.Samples)
				t.ranges[kr.Thing] = append(t.ranges[kr.Thing], [2]uint64{kr.Seq, max(kr.LastSeq, kr.Seq)})
			}
			if len(out.Records) == 0 && aws.ToInt64(out.MillisBehindLatest) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return t, nil
}

// missingFrames counts, per thing, the acknowledged frames (1 through the
// MCU's last cumulative ack) that no Kinesis record covers.
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

// chainEvent is an event row as the check needs it.
type chainEvent struct {
	env  engine.Envelope
	item map[string]ddbtypes.AttributeValue
}

// readChain returns a tenant's events in chain order.
func (r *run) readChain(ctx context.Context, tenant string) ([]chainEvent, error) {
	var out []chainEvent
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(r.sc.Names.EventsTable()),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": engine.AttrPK},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": attr.S(engine.EventPK(tenant))},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		page, err := r.app.DynamoDB.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read chain of %s: %w", tenant, err)
		}
		for _, item := range page.Items {
			env, err := engine.DecodeItem(item)
			if err != nil {
				return nil, fmt.Errorf("chain of %s: %w", tenant, err)
			}
			out = append(out, chainEvent{env: env, item: item})
		}
		if page.LastEvaluatedKey == nil {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
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
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": attr.S("IDEMP#")},
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
				id, sub, _ := strings.Cut(strings.TrimPrefix(attr.GetS(item, attr.PK), "IDEMP#"), ":")
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
