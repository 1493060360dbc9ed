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
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

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
}

// tableSpec describes one DynamoDB table.
type tableSpec struct {
	name   string
	sortK  bool
	stream bool
	ttl    string
}

// tables is the key schema, stream and TTL of each table; the rows in them
// are listed in docs/tables.md.
func tables(n resources.Names) []tableSpec {
	return []tableSpec{
		{name: n.EventsTable(), sortK: true, stream: true},
		{name: n.InboxTable(), ttl: "ttl"},
		{name: n.DeadLettersTable(), sortK: true},
		{name: n.AppTable(), sortK: true, stream: true},
	}
}

// Provision creates what is missing and reports everything.
func Provision(ctx context.Context, cfg aws.Config, n resources.Names, opts Options) (Report, error) {
	if opts.EventsVisibility == 0 {
		opts.EventsVisibility = 60 * time.Second
	}
	if opts.TelemetryShards == 0 {
		opts.TelemetryShards = 1
	}
	rep := Report{Stack: n.Stack}
	want := func(p Part) bool { return opts.Parts == nil || slices.Contains(opts.Parts, p) }
	if want(Tables) {
		if err := provisionTables(ctx, cfg, n, &rep); err != nil {
			return rep, err
		}
	}
	if want(Queues) {
		if err := provisionQueues(ctx, cfg, n, opts, &rep); err != nil {
			return rep, err
		}
	}
	if want(Streams) {
		ks, err := ensureStream(ctx, kinesis.NewFromConfig(cfg), n.TelemetryStream(), opts.TelemetryShards)
		if err != nil {
			return rep, err
		}
		rep.Resources = append(rep.Resources, ks)
	}
	return rep, nil
}

func provisionTables(ctx context.Context, cfg aws.Config, n resources.Names, rep *Report) error {
	ddb := dynamodb.NewFromConfig(cfg, awsenv.DynamoDBOptions)
	for _, t := range tables(n) {
		r, err := ensureTable(ctx, ddb, t)
		if err != nil {
			return err
		}
		rep.Resources = append(rep.Resources, r)
	}
	return nil
}

func provisionQueues(ctx context.Context, cfg aws.Config, n resources.Names, opts Options, rep *Report) error {
	q := sqs.NewFromConfig(cfg)
	dlq, err := ensureQueue(ctx, q, n.EventsDLQ(), map[string]string{
		"FifoQueue":              "true",
		"MessageRetentionPeriod": "1209600",
	})
	if err != nil {
		return err
	}
	redrive, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": dlq.ARN,
		"maxReceiveCount":     strconv.Itoa(resources.EventsMaxReceiveCount),
	})
	main, err := ensureQueue(ctx, q, n.EventsQueue(), map[string]string{
		"FifoQueue":                 "true",
		"ContentBasedDeduplication": "false",
		"VisibilityTimeout":         strconv.Itoa(int(opts.EventsVisibility.Seconds())),
		"RedrivePolicy":             string(redrive),
	})
	if err != nil {
		return err
	}
	rc, err := ensureQueue(ctx, q, n.RecordChangesQueue(), map[string]string{"VisibilityTimeout": "30"})
	if err != nil {
		return err
	}
	rep.Resources = append(rep.Resources, dlq, main, rc)
	return nil
}

func ensureTable(ctx context.Context, c *dynamodb.Client, t tableSpec) (Resource, error) {
	r := Resource{Kind: "dynamodb-table", Name: t.name}
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &t.name})
	var nf *ddbtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		in := &dynamodb.CreateTableInput{
			TableName:            &t.name,
			BillingMode:          ddbtypes.BillingModePayPerRequest,
			AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
			KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		}
		if t.sortK {
			in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String("sk"), AttributeType: ddbtypes.ScalarAttributeTypeS})
			in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange})
		}
		if t.stream {
			in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages}
		}
		if _, err := c.CreateTable(ctx, in); err != nil {
			return r, fmt.Errorf("create table %s: %w", t.name, err)
		}
		r.Created = true
		w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 200 * time.Millisecond
			o.MaxDelay = 2 * time.Second
		})
		out, err = w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: &t.name}, 2*time.Minute)
		if err != nil {
			return r, fmt.Errorf("wait for table %s: %w", t.name, err)
		}
	case err != nil:
		return r, fmt.Errorf("describe table %s: %w", t.name, err)
	}
	r.ARN = aws.ToString(out.Table.TableArn)
	r.Stream = aws.ToString(out.Table.LatestStreamArn)
	if t.stream && r.Stream == "" {
		return r, fmt.Errorf("table %s exists without a stream: enable NEW_AND_OLD_IMAGES on it", t.name)
	}
	if t.ttl != "" {
		ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &t.name})
		if err != nil {
			return r, fmt.Errorf("describe ttl of %s: %w", t.name, err)
		}
		if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled {
			if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
				TableName:               &t.name,
				TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: &t.ttl, Enabled: aws.Bool(true)},
			}); err != nil {
				return r, fmt.Errorf("enable ttl on %s: %w", t.name, err)
			}
		}
	}
	return r, nil
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
		// Bring an existing queue's settings to what Bowline needs
		// (FifoQueue cannot change and is not sent).
		set := map[string]string{}
		for k, v := range attrs {
			if k != "FifoQueue" {
				set[k] = v
			}
		}
		if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &r.URL, Attributes: set}); err != nil {
			return r, fmt.Errorf("set attributes of queue %s: %w", name, err)
		}
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &r.URL, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return r, fmt.Errorf("get arn of queue %s: %w", name, err)
	}
	r.ARN = a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	return r, nil
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
