package awscalls

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// Billing units of the services Usage counts.
const (
	// KinesisPutUnit is the 25 KB PUT payload unit of provisioned streams.
	KinesisPutUnit = 25 * 1024
	// KinesisBilledRound is the size an on-demand record is rounded up to.
	KinesisBilledRound = 1024
	// SQSChunk is the payload size billed as one SQS (and Pipes) request.
	SQSChunk = 64 * 1024
	// IoTMeterUnit is the 5 KB unit AWS IoT Core meters an HTTPS publish in.
	IoTMeterUnit = 5 * 1024
)

// UsageCounts is what the calls a Usage saw would be billed as. Unlike
// the IAM recording, which keeps each distinct request once, it counts
// every call.
type UsageCounts struct {
	// Calls by "<service id>.<operation>", failed calls included.
	Calls map[string]int64 `json:"calls"`

	// Kinesis records accepted, their bytes (data + partition key), the
	// bytes rounded up to 1 KB per record (on-demand data in), the 25 KB
	// PUT payload units; GetRecords calls and the bytes they returned.
	KinesisRecords     int64 `json:"kinesis_records"`
	KinesisBytes       int64 `json:"kinesis_bytes"`
	KinesisBilledBytes int64 `json:"kinesis_billed_bytes"`
	KinesisPutUnits    int64 `json:"kinesis_put_units"`
	KinesisGetRecords  int64 `json:"kinesis_get_records"`
	KinesisBytesRead   int64 `json:"kinesis_bytes_read"`

	// DynamoDB request units by table (capacity.go says how they are
	// derived), how many calls reported their consumed capacity and how
	// many were sized instead, and the busiest partition key's units.
	WRU map[string]float64 `json:"wru"`
	RRU map[string]float64 `json:"rru"`
	// WRUByKind and RRUByKind split them by the kind of row (Kind): a
	// table that holds several (state rows and rollups) shows each.
	WRUByKind         map[string]float64 `json:"wru_by_kind"`
	RRUByKind         map[string]float64 `json:"rru_by_kind"`
	CapacityReported  int64              `json:"capacity_reported"`
	CapacitySized     int64              `json:"capacity_sized"`
	MaxKeyWRU         float64            `json:"max_key_wru"`
	MaxKeyRRU         float64            `json:"max_key_rru"`
	StreamsGetRecords int64              `json:"streams_get_records"`

	// SQS requests in 64 KB chunks, standard and FIFO queues apart.
	SQSRequests     int64 `json:"sqs_requests"`
	SQSFIFORequests int64 `json:"sqs_fifo_requests"`

	// AWS IoT data plane Publish calls (HTTPS) and their 5 KB units
	// (request body: payload; the topic travels in the URL).
	IoTPublishes    int64 `json:"iot_publishes"`
	IoTPublishUnits int64 `json:"iot_publish_units"`
}

// Usage counts every call of the clients it configures and what AWS would
// bill for it (docs/cost.md). It is safe for concurrent use; a nil *Usage
// counts nothing.
//
// DynamoDB reads and writes are sent with ReturnConsumedCapacity TOTAL
// unless the caller asked for more (the input is changed in place, so a
// caller must not share one input between goroutines), so that the
// response says what was consumed; a response without it is sized from
// the request and response items instead.
type Usage struct {
	mu     sync.Mutex
	c      UsageCounts
	keyWRU map[string]float64
	keyRRU map[string]float64
}

// NewUsage returns an empty Usage.
func NewUsage() *Usage {
	return &Usage{
		c: UsageCounts{Calls: map[string]int64{}, WRU: map[string]float64{}, RRU: map[string]float64{},
			WRUByKind: map[string]float64{}, RRUByKind: map[string]float64{}},
		keyWRU: map[string]float64{}, keyRRU: map[string]float64{},
	}
}

// Config returns a copy of cfg whose clients are counted. With a nil
// Usage it returns cfg unchanged.
func (u *Usage) Config(cfg aws.Config) aws.Config {
	if u == nil {
		return cfg
	}
	cfg.APIOptions = append(slices.Clip(cfg.APIOptions), u.middleware)
	return cfg
}

func (u *Usage) middleware(s *middleware.Stack) error {
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc("BowlineUsage",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
			if service == "DynamoDB" {
				askCapacity(in.Parameters)
			}
			out, md, err := next.HandleInitialize(ctx, in)
			u.count(service, op, in.Parameters, out.Result, err)
			return out, md, err
		}), middleware.After)
}

// Counts returns a copy of the counts so far.
func (u *Usage) Counts() UsageCounts {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.c
	c.Calls, c.WRU, c.RRU = maps.Clone(u.c.Calls), maps.Clone(u.c.WRU), maps.Clone(u.c.RRU)
	c.WRUByKind, c.RRUByKind = maps.Clone(u.c.WRUByKind), maps.Clone(u.c.RRUByKind)
	return c
}

func (u *Usage) count(service, op string, input, result any, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.c.Calls[service+"."+op]++
	switch service {
	case "SQS":
		n := sqsRequests(input)
		if strings.HasSuffix(field(input, "QueueUrl"), ".fifo") {
			u.c.SQSFIFORequests += n
		} else {
			u.c.SQSRequests += n
		}
	case "IoT Data Plane":
		if op == "Publish" {
			u.c.IoTPublishes++
			u.c.IoTPublishUnits += units(len(bytesField(input, "Payload")), IoTMeterUnit)
		}
	case "DynamoDB Streams":
		if op == "GetRecords" {
			u.c.StreamsGetRecords++
		}
	}
	if err != nil {
		return
	}
	switch service {
	case "Kinesis":
		u.kinesis(input, result)
	case "DynamoDB":
		u.dynamo(input, result)
	}
}

func (u *Usage) kinesis(input, result any) {
	put := func(data []byte, key *string) {
		n := len(data) + len(deref(key))
		u.c.KinesisRecords++
		u.c.KinesisBytes += int64(n)
		u.c.KinesisBilledBytes += units(n, KinesisBilledRound) * KinesisBilledRound
		u.c.KinesisPutUnits += units(n, KinesisPutUnit)
	}
	switch in := input.(type) {
	case *kinesis.PutRecordInput:
		put(in.Data, in.PartitionKey)
	case *kinesis.PutRecordsInput:
		out, _ := result.(*kinesis.PutRecordsOutput)
		for i, r := range in.Records {
			if out != nil && i < len(out.Records) && out.Records[i].ErrorCode != nil {
				continue
			}
			put(r.Data, r.PartitionKey)
		}
	case *kinesis.GetRecordsInput:
		u.c.KinesisGetRecords++
		if out, ok := result.(*kinesis.GetRecordsOutput); ok {
			for _, r := range out.Records {
				u.c.KinesisBytesRead += int64(len(r.Data) + len(deref(r.PartitionKey)))
			}
		}
	}
}

// sqsRequests is the billed requests of one SQS call: one per 64 KB of
// the message bodies and attributes it sends, at least one.
func sqsRequests(input any) int64 {
	n := 0
	switch in := input.(type) {
	case *sqs.SendMessageInput:
		n = len(deref(in.MessageBody)) + attrsSize(in.MessageAttributes)
	case *sqs.SendMessageBatchInput:
		for _, e := range in.Entries {
			n += len(deref(e.MessageBody)) + attrsSize(e.MessageAttributes)
		}
	}
	return units(n, SQSChunk)
}

func attrsSize[V any](attrs map[string]V) int {
	n := 0
	for k, v := range attrs {
		n += len(k)
		rv := reflect.ValueOf(v)
		for _, f := range []string{"DataType", "StringValue"} {
			if fv := rv.FieldByName(f); fv.IsValid() && fv.Kind() == reflect.Pointer && !fv.IsNil() {
				n += fv.Elem().Len()
			}
		}
		if fv := rv.FieldByName("BinaryValue"); fv.IsValid() {
			n += fv.Len()
		}
	}
	return n
}

// units is ceil(n / unit), at least 1.
func units(n, unit int) int64 {
	return max(1, int64((n+unit-1)/unit))
}

// bytesField returns the []byte field name of the struct input points to.
func bytesField(input any, name string) []byte {
	v := reflect.ValueOf(input)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	if f := v.FieldByName(name); f.IsValid() && f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8 {
		return f.Bytes()
	}
	return nil
}

// Since returns the counts of the window from before (an earlier Counts
// of the same Usage) to c. The busiest-key fields stay c's.
func (c UsageCounts) Since(before UsageCounts) UsageCounts {
	sub := func(now, then map[string]float64) map[string]float64 {
		out := maps.Clone(now)
		if out == nil {
			out = map[string]float64{}
		}
		for k, v := range then {
			out[k] -= v
		}
		return out
	}
	out := c
	out.Calls = maps.Clone(c.Calls)
	for k, v := range before.Calls {
		out.Calls[k] -= v
	}
	out.WRU, out.RRU = sub(c.WRU, before.WRU), sub(c.RRU, before.RRU)
	out.WRUByKind, out.RRUByKind = sub(c.WRUByKind, before.WRUByKind), sub(c.RRUByKind, before.RRUByKind)
	out.KinesisRecords -= before.KinesisRecords
	out.KinesisBytes -= before.KinesisBytes
	out.KinesisBilledBytes -= before.KinesisBilledBytes
	out.KinesisPutUnits -= before.KinesisPutUnits
	out.KinesisGetRecords -= before.KinesisGetRecords
	out.KinesisBytesRead -= before.KinesisBytesRead
	out.CapacityReported -= before.CapacityReported
	out.CapacitySized -= before.CapacitySized
	out.StreamsGetRecords -= before.StreamsGetRecords
	out.SQSRequests -= before.SQSRequests
	out.SQSFIFORequests -= before.SQSFIFORequests
	out.IoTPublishes -= before.IoTPublishes
	out.IoTPublishUnits -= before.IoTPublishUnits
	return out
}
