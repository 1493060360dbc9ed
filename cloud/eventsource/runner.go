package eventsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/bowline-iot/bowline/internal/backoff"
)

// KinesisAPI is the part of the Kinesis client the Runner reads with: the
// calls Lambda's event source makes with the function's role.
type KinesisAPI interface {
	ListShards(ctx context.Context, in *kinesis.ListShardsInput, opts ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
	GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, opts ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

var _ KinesisAPI = (*kinesis.Client)(nil)

// GetRecords quotas of a shard (Kinesis Data Streams quotas): five calls
// per second and 2 MB per second, shared by every reader of the shard
// that does not use enhanced fan-out.
const (
	minReadGap        = 200 * time.Millisecond
	shardBytesPerSec  = 2 << 20
	maxGetRecordLimit = 10000
)

// Config configures a Runner.
type Config struct {
	// Spec is the mapping. Required.
	Spec Spec
	// Kinesis reads Stream (a stream name). Required.
	Kinesis KinesisAPI
	Stream  string
	// StreamARN is named in failure records; optional.
	StreamARN string
	// Handler handles the batches. Required.
	Handler Handler
	// Checkpoints and CheckpointTable keep per-shard positions (the inbox
	// table). Required.
	Checkpoints     CheckpointAPI
	CheckpointTable string
	// OnFailure and OnFailureURL are the on-failure destination (the
	// mapping's DestinationConfig.OnFailure). Required: the stand-in never
	// skips a batch without describing it.
	OnFailure    QueueAPI
	OnFailureURL string
	// FunctionARN is named in failure records. Default "local:<Spec.Name>".
	FunctionARN string
	// PollInterval is the pause after an empty read of an open shard.
	// Default 1s (Lambda reads each shard about once a second); at least
	// 200ms, the five reads per second a shard allows. A read that
	// returned bytes is followed by at least bytes / (2 MB/s).
	PollInterval time.Duration
	// ShardRefresh is how often the shard list is read again to find
	// child shards. Default 5s.
	ShardRefresh time.Duration
	// InvokeTimeout bounds each handler call (the function's timeout).
	// Default 60s.
	InvokeTimeout time.Duration
	// Retry spaces the retries of a failed batch. Default 500ms doubling
	// to 30s with half jitter.
	Retry backoff.Policy
	// Now is the clock record ages are measured by. Default time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Validate checks the config.
func (c Config) Validate() error {
	if err := c.Spec.Validate(); err != nil {
		return err
	}
	switch {
	case c.Kinesis == nil || c.Stream == "":
		return fmt.Errorf("event source %q: Kinesis and Stream are required: %w", c.Spec.Name, ErrBadConfig)
	case c.Handler == nil:
		return fmt.Errorf("event source %q: Handler is nil: %w", c.Spec.Name, ErrBadConfig)
	case c.Checkpoints == nil || c.CheckpointTable == "":
		return fmt.Errorf("event source %q: Checkpoints and CheckpointTable are required: %w", c.Spec.Name, ErrBadConfig)
	case c.OnFailure == nil || c.OnFailureURL == "":
		return fmt.Errorf("event source %q: OnFailure and OnFailureURL are required: %w", c.Spec.Name, ErrBadConfig)
	case c.PollInterval < 0 || c.ShardRefresh < 0 || c.InvokeTimeout < 0:
		return fmt.Errorf("event source %q: negative interval: %w", c.Spec.Name, ErrBadConfig)
	}
	return nil
}

// Runner is the local stand-in of one event source mapping.
type Runner struct {
	cfg Config
	log *slog.Logger
	cps *checkpoints
}

// New returns a Runner for cfg.
func New(cfg Config) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Second
	}
	cfg.PollInterval = max(cfg.PollInterval, minReadGap)
	if cfg.ShardRefresh == 0 {
		cfg.ShardRefresh = 5 * time.Second
	}
	if cfg.InvokeTimeout == 0 {
		cfg.InvokeTimeout = 60 * time.Second
	}
	if cfg.Retry == (backoff.Policy{}) {
		cfg.Retry = backoff.Policy{Base: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.5}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.FunctionARN == "" {
		cfg.FunctionARN = "local:" + cfg.Spec.Name
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{
		cfg: cfg,
		log: cfg.Logger.With("event_source", cfg.Spec.Name, "stream", cfg.Stream),
		cps: &checkpoints{client: cfg.Checkpoints, table: cfg.CheckpointTable, mapping: cfg.Spec.Name, stream: cfg.Stream},
	}, nil
}

func (r *Runner) streamARN() string {
	if r.cfg.StreamARN != "" {
		return r.cfg.StreamARN
	}
	return r.cfg.Stream
}

type shardResult struct {
	id  string
	err error
}

// Run reads every shard until ctx ends, then waits for the batches in
// flight and returns nil. A shard starts once each of its parents (both,
// after a merge) has been read to its end and handled, or is no longer
// listed (trimmed from the stream).
func (r *Runner) Run(ctx context.Context) error {
	r.log.Info("event source started", "on_failure", r.cfg.OnFailureURL)
	done := map[string]bool{}
	running := map[string]bool{}
	results := make(chan shardResult)
	for {
		shards, err := r.listShards(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("list shards failed; retrying", "err", err)
		}
		known := map[string]bool{}
		for _, sh := range shards {
			known[aws.ToString(sh.ShardId)] = true
		}
		for _, sh := range shards {
			id := aws.ToString(sh.ShardId)
			if done[id] || running[id] || ctx.Err() != nil || !parentsDone(sh, known, done) {
				continue
			}
			running[id] = true
			go func() { results <- shardResult{id, r.readShard(ctx, id)} }()
		}
		timer := time.NewTimer(r.cfg.ShardRefresh)
		select {
		case res := <-results:
			r.finish(res, running, done)
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		if ctx.Err() != nil {
			for len(running) > 0 {
				r.finish(<-results, running, done)
			}
			r.log.Info("event source stopped")
			return nil
		}
	}
}

// parentsDone reports whether every listed parent of sh is done.
func parentsDone(sh ktypes.Shard, known, done map[string]bool) bool {
	for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
		if id := aws.ToString(p); id != "" && known[id] && !done[id] {
			return false
		}
	}
	return true
}

func (r *Runner) finish(res shardResult, running, done map[string]bool) {
	delete(running, res.id)
	switch {
	case res.err == nil:
		done[res.id] = true
	case errors.Is(res.err, context.Canceled), errors.Is(res.err, context.DeadlineExceeded):
	default:
		r.log.Warn("shard reader stopped; restarting from its checkpoint", "shard", res.id, "err", res.err)
	}
}

func (r *Runner) listShards(ctx context.Context) ([]ktypes.Shard, error) {
	var shards []ktypes.Shard
	in := &kinesis.ListShardsInput{StreamName: aws.String(r.cfg.Stream)}
	for {
		out, err := r.cfg.Kinesis.ListShards(ctx, in)
		if err != nil {
			return shards, fmt.Errorf("list shards of %s: %w", r.cfg.Stream, err)
		}
		shards = append(shards, out.Shards...)
		if aws.ToString(out.NextToken) == "" {
			return shards, nil
		}
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
}
