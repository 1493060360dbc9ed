// Package provision creates every table, stream and queue named in
// docs/contract.md ("Names"), idempotently, against whatever endpoints the
// standard AWS SDK configuration names. Running it twice changes nothing.
//
// In AWS the CloudFormation templates in deploy/ own these resources; this
// package serves the local stack, tests and first-time development accounts.
package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/internal/awscalls"
	"github.com/bowline-iot/bowline/internal/awsenv"
	"github.com/bowline-iot/bowline/internal/resources"
)

// Resource is one provisioned resource.
type Resource struct {
	Kind    string `json:"kind"` // dynamodb-table, sqs-queue, kinesis-stream
	Name    string `json:"name"`
	ARN     string `json:"arn,omitempty"`
	URL     string `json:"url,omitempty"`        // queues
	Stream  string `json:"stream_arn,omitempty"` // tables with a stream
	Created bool   `json:"created"`              // false: it already existed
}

// Report lists every resource after provisioning.
type Report struct {
	Stack     string     `json:"stack"`
	Resources []Resource `json:"resources"`
}

// Part selects a kind of resource to provision.
type Part string

// The parts of the stack.
const (
	Tables  Part = "tables"  // DynamoDB tables and their streams
	Queues  Part = "queues"  // SQS queues
	Streams Part = "streams" // Kinesis streams
)

// Options tunes provisioning; the zero value is the layout of
// docs/contract.md ("Tables", "Queues, streams and pipes").
type Options struct {
	// Parts limits provisioning to some kinds of resource (a test that
	// runs only DynamoDB Local provisions only Tables). Nil means all.
	Parts []Part
	// EventsVisibility is the events queue's visibility timeout; it must be
	// longer than the worker's handler timeout. Zero means 60 seconds.
	EventsVisibility time.Duration
	// TelemetryShards is the Kinesis shard count. Zero means 1.
	TelemetryShards int32
	// EventsShards is the events stream's shard count. Zero means 1.
	EventsShards int32
}

// TableSpec is one DynamoDB table as Provision creates it: on-demand, a
// string hash key "pk" and, with SortKey, a string range key "sk".
type TableSpec struct {
	Name    string
	SortKey bool
	// StreamView is the stream's view type; "" means no stream.
	StreamView string
	// TTLAttribute is the TTL attribute; "" means no TTL.
	TTLAttribute string
	// Indexes are the table's global secondary indexes, each keys-only on
	// a string hash key. An existing table gets the ones it lacks.
	Indexes []IndexSpec
}

// IndexSpec is a keys-only global secondary index on the string attribute
// HashKey (sparse: only items with that attribute are in it).
type IndexSpec struct {
	Name    string
	HashKey string
}

// QueueSpec is one SQS queue as Provision creates it: every attribute it
// sets (SQS names and string values), and, when RedriveTo names another
// queue of the plan, a RedrivePolicy to that queue's ARN with
// MaxReceiveCount.
type QueueSpec struct {
	Name            string
	Attributes      map[string]string
	RedriveTo       string
	MaxReceiveCount int
}

// Plan is every table and queue of a stack, in creation order (a
// dead-letter queue before the queue that redrives to it). The deployed
// stack must match it: deploy/cfn's tests compare it with
// deploy/cloudformation/bowline.yaml, attribute by attribute.
type Plan struct {
	Tables []TableSpec
	Queues []QueueSpec
}

// Queue returns the plan's queue named name.
func (p Plan) Queue(name string) (QueueSpec, bool) {
	for _, q := range p.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return QueueSpec{}, false
}

// Table returns the plan's table named name.
func (p Plan) Table(name string) (TableSpec, bool) {
	for _, t := range p.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return TableSpec{}, false
}

// maxRetention is SQS's longest MessageRetentionPeriod, 14 days: the
// events queue and its DLQ keep messages that long, the same as the
// CloudFormation template. The inbox TTL must outlive both
// (engine/inbox.DefaultTTL, docs/tables.md).
const maxRetention = "1209600"

// maxMessageSize is the pipe targets' MaximumMessageSize, 256 KiB: the
// limit the relay splits batches by (engine/relay.MaxMessageBytes), set
// explicitly because newer queues default to 1 MiB.
const maxMessageSize = "262144"

// PlanFor returns the tables and queues of stack n with opts' tuning
// (zero Options: the defaults, which are the deployed stack's).
func PlanFor(n resources.Names, opts Options) Plan {
	opts.defaults()
	newAndOld := string(ddbtypes.StreamViewTypeNewAndOldImages)
	return Plan{
		// The rows in them are listed in docs/tables.md.
		Tables: []TableSpec{
			// The heads index lists tenants without reading events
			// (engine.HeadsIndex; docs/chain.md, "Finding every tenant").
			{Name: n.EventsTable(), SortKey: true, StreamView: newAndOld, Indexes: []IndexSpec{{Name: "heads", HashKey: "head_tenant"}}},
			{Name: n.InboxTable(), TTLAttribute: "ttl"},
			{Name: n.DeadLettersTable(), SortKey: true, TTLAttribute: "ttl"},
			{Name: n.AppTable(), SortKey: true, StreamView: newAndOld},
			{Name: n.AnchorsTable(), SortKey: true},
			{Name: n.TelemetryTable(), SortKey: true, TTLAttribute: "ttl"},
		},
		Queues: []QueueSpec{
			{Name: n.EventsDLQ(), Attributes: map[string]string{
				"FifoQueue":                 "true",
				"ContentBasedDeduplication": "false",
				"MessageRetentionPeriod":    maxRetention,
				"SqsManagedSseEnabled":      "true",
			}},
			{Name: n.EventsQueue(), Attributes: map[string]string{
				"FifoQueue":                 "true",
				"ContentBasedDeduplication": "false",
				// Deduplication ids are event ids, unique per tenant's
				// group; per-group scope is what high-throughput FIFO
				// needs.
				"DeduplicationScope":     "messageGroup",
				"FifoThroughputLimit":    "perMessageGroupId",
				"VisibilityTimeout":      strconv.Itoa(int(opts.EventsVisibility.Seconds())),
				"MessageRetentionPeriod": maxRetention,
				"MaximumMessageSize":     maxMessageSize,
				"SqsManagedSseEnabled":   "true",
			}, RedriveTo: n.EventsDLQ(), MaxReceiveCount: resources.EventsMaxReceiveCount},
			{Name: n.RecordChangesQueue(), Attributes: map[string]string{
				"VisibilityTimeout":      "30",
				"MessageRetentionPeriod": "345600",
				"MaximumMessageSize":     maxMessageSize,
				"SqsManagedSseEnabled":   "true",
			}},
			{Name: n.PipesDLQ(), Attributes: map[string]string{
				"MessageRetentionPeriod": maxRetention,
				"SqsManagedSseEnabled":   "true",
			}},
			{Name: n.RuleErrorsQueue(), Attributes: map[string]string{
				"MessageRetentionPeriod": maxRetention,
				"MaximumMessageSize":     maxMessageSize,
				"SqsManagedSseEnabled":   "true",
			}},
			// The telemetry event source's on-failure destination: batch
			// metadata only, so the default message size is plenty.
			{Name: n.TelemetryConsumerDLQ(), Attributes: map[string]string{
				"MessageRetentionPeriod": maxRetention,
				"SqsManagedSseEnabled":   "true",
			}},
			// The events event source's on-failure destination, alike.
			{Name: n.EventsConsumerDLQ(), Attributes: map[string]string{
				"MessageRetentionPeriod": maxRetention,
				"SqsManagedSseEnabled":   "true",
			}},
		},
	}
}

func (o *Options) defaults() {
	if o.EventsVisibility == 0 {
		o.EventsVisibility = 60 * time.Second
	}
	if o.TelemetryShards == 0 {
		o.TelemetryShards = 1
	}
	if o.EventsShards == 0 {
		o.EventsShards = 1
	}
}

// RecordedPart labels Provision's AWS calls in a recording (awscalls).
const RecordedPart = "provision"

// Provision creates what is missing and reports everything.
func Provision(ctx context.Context, cfg aws.Config, n resources.Names, opts Options) (Report, error) {
	opts.defaults()
	plan := PlanFor(n, opts)
	rep := Report{Stack: n.Stack}
	// With BOWLINE_RECORD_CALLS set, every call is recorded as part
	// "provision" (docs/iam.md): in AWS, CloudFormation makes them.
	rec, err := awscalls.FromEnv()
	if err != nil {
		return rep, err
	}
	cfg = rec.Config(cfg, awscalls.Label{Part: RecordedPart, Stack: n.Stack})
	want := func(p Part) bool { return opts.Parts == nil || slices.Contains(opts.Parts, p) }
	if want(Tables) {
		if err := provisionTables(ctx, cfg, plan, &rep); err != nil {
			return rep, err
		}
	}
	if want(Queues) {
		if err := provisionQueues(ctx, cfg, plan, &rep); err != nil {
			return rep, err
		}
	}
	if want(Streams) {
		kc := kinesis.NewFromConfig(cfg)
		for _, s := range []struct {
			name   string
			shards int32
		}{{n.TelemetryStream(), opts.TelemetryShards}, {n.EventsStream(), opts.EventsShards}} {
			ks, err := ensureStream(ctx, kc, s.name, s.shards)
			if err != nil {
				return rep, err
			}
			rep.Resources = append(rep.Resources, ks)
		}
	}
	return rep, nil
}

func provisionTables(ctx context.Context, cfg aws.Config, plan Plan, rep *Report) error {
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	for _, t := range plan.Tables {
		r, err := ensureTable(ctx, ddb, t)
		if err != nil {
			return err
		}
		rep.Resources = append(rep.Resources, r)
	}
	return nil
}

func provisionQueues(ctx context.Context, cfg aws.Config, plan Plan, rep *Report) error {
	q := sqs.NewFromConfig(cfg)
	arns := map[string]string{}
	for _, spec := range plan.Queues {
		attrs := maps.Clone(spec.Attributes)
		if spec.RedriveTo != "" {
			target, ok := arns[spec.RedriveTo]
			if !ok {
				return fmt.Errorf("queue %s redrives to %s, which the plan creates later or not at all", spec.Name, spec.RedriveTo)
			}
			redrive, _ := json.Marshal(map[string]any{"deadLetterTargetArn": target, "maxReceiveCount": spec.MaxReceiveCount})
			attrs["RedrivePolicy"] = string(redrive)
		}
		r, err := ensureQueue(ctx, q, spec.Name, attrs)
		if err != nil {
			return err
		}
		arns[spec.Name] = r.ARN
		rep.Resources = append(rep.Resources, r)
	}
	return nil
}

func ensureTable(ctx context.Context, c *dynamodb.Client, t TableSpec) (Resource, error) {
	r := Resource{Kind: "dynamodb-table", Name: t.Name}
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &t.Name})
	var nf *ddbtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		in := &dynamodb.CreateTableInput{
			TableName:            &t.Name,
			BillingMode:          ddbtypes.BillingModePayPerRequest,
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		}
		if t.SortKey {
			in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String("sk"), AttributeType: ddbtypes.ScalarAttributeTypeS})
			in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange})
		}
		if t.StreamView != "" {
			in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(t.StreamView)}
		}
		for _, ix := range t.Indexes {
			in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String(ix.HashKey), AttributeType: ddbtypes.ScalarAttributeTypeS})
			in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
				IndexName:  aws.String(ix.Name),
				KeySchema:  []ddbtypes.KeySchemaElement{{AttributeName: aws.String(ix.HashKey), KeyType: ddbtypes.KeyTypeHash}},
				Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
			})
		}
		if _, err := c.CreateTable(ctx, in); err != nil {
			return r, fmt.Errorf("create table %s: %w", t.Name, err)
		}
		r.Created = true
		w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 200 * time.Millisecond
			o.MaxDelay = 2 * time.Second
		})
		out, err = w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: &t.Name}, 2*time.Minute)
		if err != nil {
			return r, fmt.Errorf("wait for table %s: %w", t.Name, err)
		}
	case err != nil:
		return r, fmt.Errorf("describe table %s: %w", t.Name, err)
	}
	if err := ensureIndexes(ctx, c, t, out.Table.GlobalSecondaryIndexes); err != nil {
		return r, err
	}
	r.ARN = aws.ToString(out.Table.TableArn)
	r.Stream = aws.ToString(out.Table.LatestStreamArn)
	if t.StreamView != "" && r.Stream == "" {
		return r, fmt.Errorf("table %s exists without a stream: enable %s on it", t.Name, t.StreamView)
	}
	if t.TTLAttribute != "" {
		ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &t.Name})
		if err != nil {
			return r, fmt.Errorf("describe ttl of %s: %w", t.Name, err)
		}
		if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled {
			if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
				TableName:               &t.Name,
				TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: &t.TTLAttribute, Enabled: aws.Bool(true)},
			}); err != nil {
				return r, fmt.Errorf("enable ttl on %s: %w", t.Name, err)
			}
		}
	}
	return r, nil
}

// ensureIndexes adds to an existing table the indexes of t it lacks, one
// at a time (DynamoDB creates one per UpdateTable), and waits for each.
func ensureIndexes(ctx context.Context, c *dynamodb.Client, t TableSpec, have []ddbtypes.GlobalSecondaryIndexDescription) error {
	for _, ix := range t.Indexes {
		if slices.ContainsFunc(have, func(d ddbtypes.GlobalSecondaryIndexDescription) bool { return aws.ToString(d.IndexName) == ix.Name }) {
			continue
		}
		_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{
			TableName:            &t.Name,
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String(ix.HashKey), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			GlobalSecondaryIndexUpdates: []ddbtypes.GlobalSecondaryIndexUpdate{{Create: &ddbtypes.CreateGlobalSecondaryIndexAction{
				IndexName:  aws.String(ix.Name),
				KeySchema:  []ddbtypes.KeySchemaElement{{AttributeName: aws.String(ix.HashKey), KeyType: ddbtypes.KeyTypeHash}},
				Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
			}}},
		})
		if err != nil {
			return fmt.Errorf("add index %s to %s: %w", ix.Name, t.Name, err)
		}
		for {
			out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &t.Name})
			if err != nil {
				return fmt.Errorf("describe table %s: %w", t.Name, err)
			}
			active := false
			for _, d := range out.Table.GlobalSecondaryIndexes {
				if aws.ToString(d.IndexName) == ix.Name && d.IndexStatus == ddbtypes.IndexStatusActive {
					active = true
				}
			}
			if active {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func ensureQueue(ctx context.Context, c *sqs.Client, name string, attrs map[string]string) (Resource, error) {
	r := Resource{Kind: "sqs-queue", Name: name}
	got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	var missing *sqstypes.QueueDoesNotExist
	switch {
	case errors.As(err, &missing):
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
		if err != nil {
			return r, fmt.Errorf("create queue %s: %w", name, err)
		}
		r.URL, r.Created = aws.ToString(out.QueueUrl), true
	case err != nil:
		return r, fmt.Errorf("get queue url %s: %w", name, err)
	default:
		r.URL = aws.ToString(got.QueueUrl)
		if err := alignQueue(ctx, c, name, r.URL, attrs); err != nil {
			return r, err
		}
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &r.URL, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return r, fmt.Errorf("get arn of queue %s: %w", name, err)
	}
	r.ARN = a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	return r, nil
}

// alignQueue brings an existing queue's settings to attrs: it sets the
// attributes whose current value differs. FifoQueue cannot change and is
// not sent; an attribute the endpoint does not report (an emulator that
// does not model it, as fauxqs does not SqsManagedSseEnabled) is left
// alone. RedrivePolicy is compared as JSON.
func alignQueue(ctx context.Context, c *sqs.Client, name, url string, attrs map[string]string) error {
	cur, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		return fmt.Errorf("get attributes of queue %s: %w", name, err)
	}
	set := map[string]string{}
	for k, v := range attrs {
		have, ok := cur.Attributes[k]
		if k == "FifoQueue" || !ok || SameAttribute(k, have, v) {
			continue
		}
		set[k] = v
	}
	if len(set) == 0 {
		return nil
	}
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: set}); err != nil {
		return fmt.Errorf("set attributes %v of queue %s: %w", slices.Sorted(maps.Keys(set)), name, err)
	}
	return nil
}

// SameAttribute reports whether two values of queue attribute name are
// the same setting: RedrivePolicy compares as JSON (SQS returns
// maxReceiveCount as a number or a string), the rest as strings.
func SameAttribute(name, a, b string) bool {
	if name != "RedrivePolicy" {
		return a == b
	}
	var pa, pb struct {
		Target string          `json:"deadLetterTargetArn"`
		Max    json.RawMessage `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(a), &pa) != nil || json.Unmarshal([]byte(b), &pb) != nil {
		return a == b
	}
	return pa.Target == pb.Target && strings.Trim(string(pa.Max), `"`) == strings.Trim(string(pb.Max), `"`)
}

func ensureStream(ctx context.Context, c *kinesis.Client, name string, shards int32) (Resource, error) {
	r := Resource{Kind: "kinesis-stream", Name: name}
	_, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &name})
	var nf *kintypes.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		if _, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: aws.Int32(shards)}); err != nil {
			return r, fmt.Errorf("create stream %s: %w", name, err)
		}
		r.Created = true
	case err != nil:
		return r, fmt.Errorf("describe stream %s: %w", name, err)
	}
	w := kinesis.NewStreamExistsWaiter(c, func(o *kinesis.StreamExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = time.Second
	})
	out, err := w.WaitForOutput(ctx, &kinesis.DescribeStreamInput{StreamName: &name}, 2*time.Minute)
	if err != nil {
		return r, fmt.Errorf("wait for stream %s: %w", name, err)
	}
	r.ARN = aws.ToString(out.StreamDescription.StreamARN)
	return r, nil
}
