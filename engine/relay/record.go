package relay

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/bowline-iot/bowline/engine/ddbjson"
)

// RecordValue turns a DynamoDB Streams record into the JSON-shaped value an
// EventBridge Pipe filters and transforms: eventID, eventName, eventSource,
// awsRegion, eventVersion and dynamodb{Keys, NewImage, OldImage,
// SequenceNumber, SizeBytes, StreamViewType, ApproximateCreationDateTime},
// images in DynamoDB JSON.
func RecordValue(r streamtypes.Record, sourceARN string) (map[string]any, error) {
	v := map[string]any{
		"eventID":        str(r.EventID),
		"eventName":      string(r.EventName),
		"eventVersion":   str(r.EventVersion),
		"eventSource":    str(r.EventSource),
		"awsRegion":      str(r.AwsRegion),
		"eventSourceARN": sourceARN,
	}
	if r.Dynamodb == nil {
		return v, nil
	}
	d := r.Dynamodb
	dv := map[string]any{
		"SequenceNumber": str(d.SequenceNumber),
		"StreamViewType": string(d.StreamViewType),
	}
	if d.SizeBytes != nil {
		dv["SizeBytes"] = float64(*d.SizeBytes)
	}
	if d.ApproximateCreationDateTime != nil {
		dv["ApproximateCreationDateTime"] = float64(d.ApproximateCreationDateTime.Unix())
	}
	for name, img := range map[string]map[string]streamtypes.AttributeValue{"Keys": d.Keys, "NewImage": d.NewImage, "OldImage": d.OldImage} {
		if img == nil {
			continue
		}
		item, err := attributevalue.FromDynamoDBStreamsMap(img)
		if err != nil {
			return nil, fmt.Errorf("record %s %s: %w", str(r.EventID), name, err)
		}
		m, err := ddbjson.MapValue(item)
		if err != nil {
			return nil, fmt.Errorf("record %s %s: %w", str(r.EventID), name, err)
		}
		dv[name] = m
	}
	v["dynamodb"] = dv
	return v, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Message is one record transformed for SQS.
type Message struct {
	Body    string
	GroupID string // "" for a standard queue
	DedupID string // "" for a standard queue
	// Sequence is the stream sequence number the message came from.
	Sequence string
	// Created is the record's approximate creation time (zero if unknown).
	Created time.Time
	// Shard is the stream shard the record came from (set by the relay).
	Shard string
}

// Pipe is a compiled PipeSpec.
type Pipe struct {
	spec   PipeSpec
	filter *Filter
}

// Compile validates spec and compiles its filter.
func Compile(spec PipeSpec) (*Pipe, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	f, err := CompileFilters(spec.Filters)
	if err != nil {
		return nil, fmt.Errorf("pipe %q: %w", spec.Name, err)
	}
	return &Pipe{spec: spec, filter: f}, nil
}

// Spec returns the pipe's spec.
func (p *Pipe) Spec() PipeSpec { return p.spec }

// Transform applies the filter and the transform to one record. ok is false
// when the filter rejects the record; err is a *TransformError when the
// filter accepts it but a path does not resolve.
func (p *Pipe) Transform(rec map[string]any) (msg Message, ok bool, err error) {
	if !p.filter.Match(rec) {
		return Message{}, false, nil
	}
	seq, _ := resolve(rec, "$.dynamodb.SequenceNumber")
	msg.Sequence, _ = seq.(string)
	if c, found := resolve(rec, "$.dynamodb.ApproximateCreationDateTime"); found {
		if f, isNum := c.(float64); isNum {
			msg.Created = time.Unix(int64(f), 0)
		}
	}
	fail := func(path, problem string) (Message, bool, error) {
		id, _ := rec["eventID"].(string)
		return Message{}, true, &TransformError{Pipe: p.spec.Name, EventID: id, Path: path, Problem: problem, Sequence: msg.Sequence}
	}
	body, found := resolve(rec, p.spec.BodyPath)
	if !found || body == nil {
		return fail(p.spec.BodyPath, "is absent")
	}
	if s, isStr := body.(string); isStr {
		msg.Body = s
	} else {
		b, err := json.Marshal(body)
		if err != nil {
			return fail(p.spec.BodyPath, "does not encode: "+err.Error())
		}
		msg.Body = EscapeJSON(string(b))
	}
	if !p.spec.FIFO() {
		return msg, true, nil
	}
	for _, f := range []struct {
		path string
		dst  *string
	}{{p.spec.GroupIDPath, &msg.GroupID}, {p.spec.DedupIDPath, &msg.DedupID}} {
		v, found := resolve(rec, f.path)
		s, isStr := v.(string)
		switch {
		case !found:
			return fail(f.path, "is absent")
		case !isStr || s == "":
			return fail(f.path, "is not a non-empty string")
		}
		*f.dst = s
	}
	return msg, true, nil
}
