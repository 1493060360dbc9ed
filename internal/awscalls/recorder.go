package awscalls

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go/middleware"
)

// Env is the environment variable that switches recording on: the path
// of the file (JSON lines) every recorded call is appended to.
const Env = "BOWLINE_RECORD_CALLS"

// iteratorGeneration is how many shard iterators one generation of the
// iterator map holds; the previous generation is kept, older ones dropped.
const iteratorGeneration = 4096

// Label names who makes the calls of a client: a part of a process (the
// labels cloud/app hands out) on a stack.
type Label struct {
	Part  string
	Stack string
}

// Recorder appends the distinct requests of its process's calls to one
// file. It is safe for concurrent use; a nil *Recorder records nothing.
type Recorder struct {
	path string

	mu     sync.Mutex
	f      *os.File
	seen   map[string]bool
	failed bool
	// iters and oldIters map shard iterators to their stream's ARN.
	iters, oldIters map[string]string
	// claims attributes transaction items (the *types.Put, *types.Update,
	// ... of a caller's writes) to the part that asked for them.
	claims map[any]string
}

var (
	openMu    sync.Mutex
	recorders = map[string]*Recorder{}
)

// FromEnv returns the process's recorder for the file Env names, or nil
// when Env is unset or empty.
func FromEnv() (*Recorder, error) {
	p := os.Getenv(Env)
	if p == "" {
		return nil, nil
	}
	return Open(p)
}

// Open returns the process's recorder appending to path, creating the file
// if needed. Every caller in a process gets the same Recorder for a path.
func Open(path string) (*Recorder, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", Env, path, err)
	}
	openMu.Lock()
	defer openMu.Unlock()
	if r, ok := recorders[abs]; ok {
		return r, nil
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Env, err)
	}
	r := &Recorder{path: abs, f: f, seen: map[string]bool{}, iters: map[string]string{}, claims: map[any]string{}}
	recorders[abs] = r
	return r, nil
}

// Path is the file the recorder appends to.
func (r *Recorder) Path() string { return r.path }

// Config returns a copy of cfg whose clients record every call under l.
// With a nil Recorder it returns cfg unchanged.
func (r *Recorder) Config(cfg aws.Config, l Label) aws.Config {
	if r == nil {
		return cfg
	}
	cfg.APIOptions = append(slices.Clip(cfg.APIOptions), r.middleware(l))
	return cfg
}

// middleware records each call before it is sent (a call AWS would refuse
// is recorded all the same) and remembers the shard iterators it returns.
func (r *Recorder) middleware(l Label) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("BowlineRecordCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				region := awsmiddleware.GetRegion(ctx)
				r.record(l, awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), in.Parameters, region, false)
				out, md, err := next.HandleInitialize(ctx, in)
				if err == nil {
					r.remember(in.Parameters, out.Result, region)
				}
				return out, md, err
			}), middleware.After)
	}
}

// Cached records a call the process answered from a cache instead of
// making it (serviceID and operation as the SDK names them).
func (r *Recorder) Cached(l Label, serviceID, operation string, input any, region string) {
	if r == nil {
		return
	}
	r.record(l, serviceID, operation, input, region, true)
}

// Claim attributes the transaction items of writes to part until release
// is called: a process whose parts share one engine (bowline dev) claims
// each part's own writes around its emit, and the engine's transaction
// records them under that part.
func (r *Recorder) Claim(part string, writes []ddbtypes.TransactWriteItem) (release func()) {
	if r == nil || len(writes) == 0 {
		return func() {}
	}
	ptrs := make([]any, 0, len(writes))
	for _, w := range writes {
		if p := itemPtr(w); p != nil {
			ptrs = append(ptrs, p)
		}
	}
	r.mu.Lock()
	for _, p := range ptrs {
		r.claims[p] = part
	}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		for _, p := range ptrs {
			delete(r.claims, p)
		}
		r.mu.Unlock()
	}
}

func itemPtr(w ddbtypes.TransactWriteItem) any {
	switch {
	case w.Put != nil:
		return w.Put
	case w.Update != nil:
		return w.Update
	case w.Delete != nil:
		return w.Delete
	case w.ConditionCheck != nil:
		return w.ConditionCheck
	}
	return nil
}

// stream returns the stream that handed out iterator; r.mu must be held.
func (r *Recorder) stream(iterator string) (string, bool) {
	if s, ok := r.iters[iterator]; ok {
		return s, true
	}
	s, ok := r.oldIters[iterator]
	return s, ok
}

func (r *Recorder) record(l Label, serviceID, operation string, input any, region string, cached bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := Authorize(serviceID, operation, input, region, iteratorFunc(r.stream))
	var items []ddbtypes.TransactWriteItem
	if in, ok := input.(*dynamodb.TransactWriteItemsInput); ok && len(in.TransactItems) == len(calls) {
		items = in.TransactItems
	}
	for i, c := range calls {
		c.Part, c.Stack, c.Region, c.Cached = l.Part, l.Stack, region, cached
		if items != nil {
			if part, ok := r.claims[itemPtr(items[i])]; ok {
				c.Part = part
			}
		}
		k := c.key()
		if r.seen[k] {
			continue
		}
		r.seen[k] = true
		line, err := json.Marshal(c)
		if err == nil {
			_, err = r.f.Write(append(line, '\n'))
		}
		if err != nil && !r.failed {
			r.failed = true
			fmt.Fprintf(os.Stderr, "awscalls: recording to %s: %v (later calls go unrecorded)\n", r.path, err)
		}
	}
}

// remember maps the shard iterators a call returned to their stream.
func (r *Recorder) remember(input, result any, region string) {
	a := arns{region: region}
	var stream, next string
	switch out := result.(type) {
	case *dynamodbstreams.GetShardIteratorOutput:
		if in, ok := input.(*dynamodbstreams.GetShardIteratorInput); ok {
			stream, next = a.normalize(deref(in.StreamArn)), deref(out.ShardIterator)
		}
	case *dynamodbstreams.GetRecordsOutput:
		if in, ok := input.(*dynamodbstreams.GetRecordsInput); ok {
			stream, _ = r.lockedStream(deref(in.ShardIterator))
			next = deref(out.NextShardIterator)
		}
	case *kinesis.GetShardIteratorOutput:
		if in, ok := input.(*kinesis.GetShardIteratorInput); ok {
			stream, next = a.stream(deref(in.StreamName)), deref(out.ShardIterator)
			if in.StreamARN != nil {
				stream = a.normalize(*in.StreamARN)
			}
		}
	case *kinesis.GetRecordsOutput:
		if in, ok := input.(*kinesis.GetRecordsInput); ok {
			stream, _ = r.lockedStream(deref(in.ShardIterator))
			next = deref(out.NextShardIterator)
		}
	}
	if stream == "" || next == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.iters) >= iteratorGeneration {
		r.oldIters, r.iters = r.iters, map[string]string{}
	}
	r.iters[next] = stream
}

func (r *Recorder) lockedStream(iterator string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stream(iterator)
}

// iteratorFunc is a function as Iterators.
type iteratorFunc func(string) (string, bool)

func (f iteratorFunc) Stream(iterator string) (string, bool) { return f(iterator) }

// Read returns the calls recorded in the file at path, in order.
func Read(path string) ([]Call, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read recorded calls: %w", err)
	}
	defer f.Close()
	var out []Call
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var c Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
