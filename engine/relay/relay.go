package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/bowline-iot/bowline/internal/backoff"
)

// StreamsAPI is the part of the DynamoDB Streams client the relay uses.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// TableAPI finds a table's stream.
type TableAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var (
	_ StreamsAPI = (*dynamodbstreams.Client)(nil)
	_ TableAPI   = (*dynamodb.Client)(nil)
)

// Config configures a Relay.
type Config struct {
	// Pipe is the filter and transform (EventsPipe or RecordChangesPipe).
	Pipe PipeSpec
	// Streams reads the source stream. Required.
	Streams StreamsAPI
	// StreamARN is the source stream; when empty it is looked up from
	// Table through Tables.
	StreamARN string
	Table     string
	Tables    TableAPI
	// Queue and QueueURL are the target. Required.
	Queue    QueueAPI
	QueueURL string
	// DeadLetterURL is the standard queue that takes, through Queue, a
	// DeadLetter for each record SQS will not accept (Failure says when),
	// like the Pipe's DeadLetterConfig. Without it such a record is retried
	// for ever, holding its shard, never skipped.
	DeadLetterURL string
	// Checkpoints and CheckpointTable hold per-shard positions (the inbox
	// table). Required.
	Checkpoints     CheckpointAPI
	CheckpointTable string
	// PollInterval is the pause after an empty read of an open shard.
	// Default 250ms.
	PollInterval time.Duration
	// ShardRefresh is how often the shard list is re-read to find new
	// shards. Default 5s.
	ShardRefresh time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Observer defaults to NopObserver.
	Observer Observer
}

// Validate checks the config; it does not change it.
func (c Config) Validate() error {
	if err := c.Pipe.Validate(); err != nil {
		return fmt.Errorf("relay config: %w", err)
	}
	switch {
	case c.Streams == nil:
		return errors.New("relay config: Streams is nil")
	case c.StreamARN == "" && (c.Table == "" || c.Tables == nil):
		return errors.New("relay config: need StreamARN, or Table and Tables")
	case c.Queue == nil || c.QueueURL == "":
		return errors.New("relay config: Queue and QueueURL are required")
	case c.Checkpoints == nil || c.CheckpointTable == "":
		return errors.New("relay config: Checkpoints and CheckpointTable are required")
	case c.PollInterval < 0 || c.ShardRefresh < 0:
		return errors.New("relay config: negative interval")
	}
	return nil
}

// Relay forwards one stream to one queue through one pipe.
type Relay struct {
	cfg     Config
	pipe    *Pipe
	log     *slog.Logger
	obs     Observer
	cps     *checkpoints
	backoff backoff.Policy // between sends SQS refused
}

// setDefaults fills the zero fields with their defaults.
func (c *Config) setDefaults() {
	if c.PollInterval == 0 {
		c.PollInterval = 250 * time.Millisecond
	}
	if c.ShardRefresh == 0 {
		c.ShardRefresh = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
}

// New fills cfg's defaults, validates it and returns a Relay.
func New(cfg Config) (*Relay, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, err := Compile(cfg.Pipe)
	if err != nil {
		return nil, err
	}
	return &Relay{cfg: cfg, pipe: p, log: cfg.Logger.With("pipe", cfg.Pipe.Name), obs: cfg.Observer, backoff: retry}, nil
}

// StreamARN returns the source stream's ARN, looking it up if needed.
func (r *Relay) StreamARN(ctx context.Context) (string, error) {
	if r.cfg.StreamARN != "" {
		return r.cfg.StreamARN, nil
	}
	out, err := r.cfg.Tables.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(r.cfg.Table)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", r.cfg.Table, err)
	}
	if out.Table == nil || out.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("table %s: %w", r.cfg.Table, ErrNoStream)
	}
	r.cfg.StreamARN = *out.Table.LatestStreamArn
	return r.cfg.StreamARN, nil
}

type shardResult struct {
	id  string
	err error
}

// Run relays until ctx ends, then returns nil. It returns an error only
// when the stream cannot be found.
func (r *Relay) Run(ctx context.Context) error {
	arn, err := r.StreamARN(ctx)
	if err != nil {
		return err
	}
	r.cps = &checkpoints{client: r.cfg.Checkpoints, table: r.cfg.CheckpointTable, pipe: r.cfg.Pipe.Name, stream: arn}
	r.log.Info("relay started", "stream", arn, "queue", r.cfg.QueueURL)
	done := map[string]bool{}
	running := map[string]bool{}
	results := make(chan shardResult)
	for {
		shards, err := r.listShards(ctx, arn)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("list shards failed; retrying", "err", err)
		}
		known := map[string]bool{}
		for _, sh := range shards {
			known[aws.ToString(sh.ShardId)] = true
		}
		if err == nil && len(shards) > 0 {
			// A finished shard the stream no longer lists (trimmed after
			// 24 h) can never be listed again: forget it, so a relay that
			// runs for months does not remember every shard it ever read.
			// (Were it listed again, it would resume from its checkpoint.)
			for id := range done {
				if !known[id] {
					delete(done, id)
				}
			}
		}
		for _, sh := range shards {
			id, parent := aws.ToString(sh.ShardId), aws.ToString(sh.ParentShardId)
			if done[id] || running[id] || ctx.Err() != nil {
				continue
			}
			if parent != "" && known[parent] && !done[parent] {
				continue // parents before children
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
			r.log.Info("relay stopped")
			return nil
		}
	}
}

func (r *Relay) finish(res shardResult, running, done map[string]bool) {
	delete(running, res.id)
	switch {
	case res.err == nil:
		done[res.id] = true
	case errors.Is(res.err, context.Canceled), errors.Is(res.err, context.DeadlineExceeded):
	default:
		r.log.Warn("shard reader stopped; restarting from its checkpoint", "shard", res.id, "err", res.err)
	}
}

func (r *Relay) listShards(ctx context.Context, arn string) ([]streamtypes.Shard, error) {
	var shards []streamtypes.Shard
	var start *string
	for {
		out, err := r.cfg.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn), ExclusiveStartShardId: start})
		if err != nil {
			return shards, fmt.Errorf("describe stream %s: %w", arn, err)
		}
		if out.StreamDescription == nil {
			return shards, nil
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return shards, nil
		}
		start = out.StreamDescription.LastEvaluatedShardId
	}
}

// readShard forwards one shard from its checkpoint to its end (nil) or
// until ctx ends.
func (r *Relay) readShard(ctx context.Context, shard string) error {
	log := r.log.With("shard", shard)
	cp, err := r.cps.load(ctx, shard)
	if err != nil {
		return err
	}
	if cp.Closed {
		return nil
	}
	iter, err := r.iterator(ctx, shard, cp.Sequence)
	if err != nil {
		return err
	}
	// Reading runs ahead of sending (up to readAhead messages): the
	// records read wait in b, each batch takes the first pending message
	// of up to ten groups, and the checkpoint follows the records sent
	// without a gap. A new read is made at once while reads return
	// records, else every PollInterval, also while a backlog is being
	// sent, so a record written during one tenant's burst joins the next
	// batch instead of waiting for the burst.
	var b backlog
	readSeq := cp.Sequence // the last record read
	more := true           // the last read returned records
	gone := false
	var lastRead, lastSave time.Time
	trimmedAtHorizon := false
	for failures := 0; ; {
		if iter == "" && len(b.recs) == 0 {
			break
		}
		if iter != "" && len(b.pending) < readAhead && (more || time.Since(lastRead) >= r.cfg.PollInterval) {
			out, err := r.cfg.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(iter), Limit: aws.Int32(1000)})
			lastRead = time.Now()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var expired *streamtypes.ExpiredIteratorException
				var notFound *streamtypes.ResourceNotFoundException
				var trimmed *streamtypes.TrimmedDataAccessException
				switch {
				case errors.As(err, &expired):
					log.Info("shard iterator expired; renewing after the last record read", "seq", readSeq)
				case errors.As(err, &trimmed) && readSeq == "" && !trimmedAtHorizon:
					// Nothing read yet, so the iterator was at the trim
					// horizon and nothing relayed can be missed: DynamoDB
					// Local says this of a new, empty shard's first read
					// (docs/local-stack.md). A repeat still warns below.
					trimmedAtHorizon = true
					log.Info("iterator at the trim horizon reported trimmed; renewing it at the horizon", "err", err)
				case errors.As(err, &notFound):
					log.Warn("shard is gone", "err", err)
					iter, gone = "", true
					continue
				default:
					failures++
					log.Warn("get records failed; retrying", "err", err)
					if err := retry.Wait(ctx, failures); err != nil {
						return err
					}
				}
				if iter, err = r.iterator(ctx, shard, readSeq); err != nil {
					return err
				}
				continue
			}
			failures = 0
			more = len(out.Records) > 0
			if more {
				if err := r.forward(ctx, shard, &b, out.Records); err != nil {
					return err
				}
				readSeq = aws.ToString(out.Records[len(out.Records)-1].Dynamodb.SequenceNumber)
			}
			iter = aws.ToString(out.NextShardIterator)
		}
		if len(b.pending) > 0 {
			if err := r.sendNext(ctx, &b); err != nil {
				return err
			}
		}
		if seq := b.advance(); seq != "" {
			cp.Sequence = seq
			if len(b.recs) == 0 || time.Since(lastSave) >= checkpointEvery {
				if err := r.saveCheckpoint(ctx, shard, cp); err != nil {
					return err
				}
				lastSave = time.Now()
			}
		}
		if len(b.pending) == 0 && iter != "" && !more {
			if err := backoff.Sleep(ctx, r.cfg.PollInterval-time.Since(lastRead)); err != nil {
				return err
			}
		}
	}
	if gone {
		return r.saveCheckpoint(ctx, shard, cp)
	}
	cp.Closed = true
	log.Info("shard closed and fully relayed", "seq", cp.Sequence)
	return r.saveCheckpoint(ctx, shard, cp)
}

// saveCheckpoint retries until the checkpoint is written or ctx ends: a
// lost checkpoint only means resending, but giving up would stall.
func (r *Relay) saveCheckpoint(ctx context.Context, shard string, cp checkpoint) error {
	for attempt := 0; ; attempt++ {
		err := r.cps.save(ctx, shard, cp)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("save checkpoint failed; retrying", "shard", shard, "err", err)
		if err := retry.Wait(ctx, attempt+1); err != nil {
			return err
		}
	}
}

// iterator returns an iterator just after seq, or at the trim horizon when
// seq is empty or already trimmed from the stream.
func (r *Relay) iterator(ctx context.Context, shard, seq string) (string, error) {
	for attempt := 0; ; attempt++ {
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.cfg.StreamARN), ShardId: aws.String(shard), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon}
		if seq != "" {
			in.ShardIteratorType = streamtypes.ShardIteratorTypeAfterSequenceNumber
			in.SequenceNumber = aws.String(seq)
		}
		out, err := r.cfg.Streams.GetShardIterator(ctx, in)
		if err == nil {
			return aws.ToString(out.ShardIterator), nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var trimmed *streamtypes.TrimmedDataAccessException
		var gone *streamtypes.ResourceNotFoundException
		switch {
		case errors.As(err, &trimmed) && seq != "":
			r.log.Error("checkpoint is older than the stream's retention; records after it may be lost, restarting at the trim horizon",
				"shard", shard, "seq", seq)
			seq = ""
			continue
		case errors.As(err, &gone):
			return "", nil
		}
		r.log.Warn("get shard iterator failed; retrying", "shard", shard, "err", err)
		if err := retry.Wait(ctx, attempt+1); err != nil {
			return "", err
		}
	}
}

// forward filters and transforms records and adds them to the shard's
// backlog, in stream order, to be sent.
func (r *Relay) forward(ctx context.Context, shard string, b *backlog, records []streamtypes.Record) error {
	filtered := 0
	defer func() { r.obs.Filtered(filtered) }()
	for _, rec := range records {
		seq := ""
		if rec.Dynamodb != nil {
			seq = aws.ToString(rec.Dynamodb.SequenceNumber)
		}
		v, err := RecordValue(rec, r.cfg.StreamARN)
		if err != nil {
			r.obs.TransformFailed()
			r.log.Error("record does not convert; not forwarded", "err", err)
			b.skip(seq)
			continue
		}
		msg, ok, err := r.pipe.Transform(v)
		switch {
		case err != nil:
			r.obs.TransformFailed()
			r.log.Error("transform failed; record not forwarded", "err", err)
			b.skip(seq)
			continue
		case !ok:
			filtered++
			b.skip(seq)
			continue
		}
		msg.Shard = shard
		if err := r.admit(ctx, b, []Message{msg}); err != nil {
			return err
		}
	}
	return nil
}
