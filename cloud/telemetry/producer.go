package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/internal/backoff"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// record is one Kinesis record on its way, and who to tell.
type record struct {
	key  string
	data []byte
	done func(error)
	last string // why Kinesis last refused it, for ErrRetriesExhausted
}

func (r *record) size() int { return len(r.key) + len(r.data) }

// Producer batches records into PutRecords calls. Each record's done
// callback is called exactly once: with nil when Kinesis accepted the record,
// with ErrClosed when the producer was closed first, or, when
// ProducerConfig.MaxAttempts bounds the attempts, with ErrRetriesExhausted.
// Failed records and throttled calls are retried until then, never dropped.
type Producer struct {
	cfg    ProducerConfig
	client KinesisAPI

	mu     sync.RWMutex
	closed bool
	in     chan *record

	work     context.Context // retries run until this ends
	abandon  context.CancelFunc
	loopDone chan struct{}
	lim      *limiter // adaptive bound on calls in flight
	inflight sync.WaitGroup
}

// NewProducer fills cfg's defaults, validates it and starts the batching loop; Close stops it.
func NewProducer(client KinesisAPI, cfg ProducerConfig) (*Producer, error) {
	if client == nil {
		return nil, errors.New("telemetry producer: nil Kinesis client")
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	work, abandon := context.WithCancel(context.Background())
	p := &Producer{
		cfg: cfg, client: client,
		in:       make(chan *record, cfg.MaxRecords),
		work:     work,
		abandon:  abandon,
		loopDone: make(chan struct{}),
	}
	p.lim = newLimiter(cfg.MaxInFlight, cfg.CallTimeout, cfg.Observer.InFlightLimit)
	go p.loop()
	return p, nil
}

// Put queues one record for partition key key. It blocks while the queue is
// full, until ctx ends (then it returns ctx's error and done is not called).
// done is called once, from another goroutine, and must not block for long.
func (p *Producer) Put(ctx context.Context, key string, data []byte, done func(error)) error {
	if key == "" || len(key) > maxPartitionKeyLn {
		return fmt.Errorf("kinesis partition key %q: want 1-%d bytes", key, maxPartitionKeyLn)
	}
	if len(data)+len(key) > MaxKinesisRecord {
		return fmt.Errorf("kinesis record for %q: %d bytes exceed %d", key, len(data)+len(key), MaxKinesisRecord)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	select {
	case p.in <- &record{key: key, data: data, done: done}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting records, sends what is queued and waits for every
// record to be accepted. When ctx ends first, retries are abandoned and the
// records still unaccepted get ErrClosed. It returns ctx's error in that case.
func (p *Producer) Close(ctx context.Context) error {
	stop := context.AfterFunc(ctx, p.abandon)
	defer stop()
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.in)
	}
	p.mu.Unlock()
	<-p.loopDone
	p.abandon()
	return ctx.Err()
}

// loop batches records. A batch is sent when it is full, or when it has
// lingered and a call slot is free: while every slot is busy the batch keeps
// growing, so a backlog goes out in full batches, as raw PutRecords would.
func (p *Producer) loop() {
	defer close(p.loopDone)
	defer p.inflight.Wait()
	var (
		batch    []*record
		overflow *record // the record that did not fit in batch
		size     int
		lingered bool
		closed   bool
		timer    = time.NewTimer(time.Hour)
	)
	timer.Stop()
	add := func(r *record) {
		batch = append(batch, r)
		size += r.size()
		if len(batch) == 1 {
			lingered = false
			timer.Reset(p.cfg.Linger)
		}
	}
	for {
		full := len(batch) >= p.cfg.MaxRecords || overflow != nil
		if closed && len(batch) == 0 {
			return
		}
		var inC <-chan *record
		if !closed && !full {
			inC = p.in
		}
		var slotFreed <-chan struct{}
		if len(batch) > 0 && (full || lingered || closed) {
			ok, wait := p.lim.tryAcquire()
			if ok {
				b := batch
				batch, size = nil, 0
				timer.Stop()
				p.inflight.Add(1)
				go func() {
					defer p.inflight.Done()
					p.send(b)
				}()
				if overflow != nil {
					add(overflow)
					overflow = nil
				}
				continue
			}
			slotFreed = wait
		}
		select {
		case r, ok := <-inC:
			if !ok {
				closed = true
				continue
			}
			if len(batch) > 0 && size+r.size() > p.cfg.MaxBytes {
				overflow = r
				continue
			}
			add(r)
		case <-timer.C:
			lingered = true
		case <-slotFreed:
		}
	}
}

// send puts batch until every record is accepted or the producer abandons.
func (p *Producer) send(batch []*record) {
	// The caller acquired a slot; a retry gives it back while it backs
	// off, so a halved limit also holds back the calls already retrying.
	held := true
	defer func() {
		if held {
			p.lim.release()
		}
	}()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			p.lim.release()
			held = false
			retry := backoff.Policy{Base: p.cfg.BackoffBase, Max: p.cfg.BackoffMax, Jitter: 1}
			if retry.Wait(p.work, attempt-1) != nil || !p.lim.acquire(p.work) {
				for _, r := range batch {
					r.done(ErrClosed)
				}
				return
			}
			held = true
		}
		in := &kinesis.PutRecordsInput{StreamName: aws.String(p.cfg.Stream), Records: make([]types.PutRecordsRequestEntry, len(batch))}
		size := 0
		for i, r := range batch {
			in.Records[i] = types.PutRecordsRequestEntry{Data: r.data, PartitionKey: aws.String(r.key)}
			size += r.size()
		}
		ctx, cancel := context.WithTimeout(p.work, p.lim.callTimeout())
		start := time.Now()
		out, err := p.client.PutRecords(ctx, in)
		cancel()
		if err == nil && len(out.Records) != len(batch) {
			err = fmt.Errorf("put records to %s: %d results for %d records", p.cfg.Stream, len(out.Records), len(batch))
		}
		if err != nil {
			p.lim.outcome(overload(err))
			p.cfg.Observer.PutRecords(len(batch), size, len(batch), err, time.Since(start))
			for range batch {
				p.cfg.Observer.RecordRetried("call_error")
			}
			for _, r := range batch {
				r.last = err.Error()
			}
			if p.giveUp(batch, attempt) {
				return
			}
			if p.work.Err() == nil {
				p.cfg.Logger.Warn("kinesis put records failed; backing off", "stream", p.cfg.Stream, "records", len(batch), "attempt", attempt+1, "err", err)
			}
			continue
		}
		var failed []*record
		throttled := false
		for i, res := range out.Records {
			if res.ErrorCode == nil {
				batch[i].done(nil)
				continue
			}
			throttled = throttled || throttleCodes[aws.ToString(res.ErrorCode)]
			batch[i].last = aws.ToString(res.ErrorCode) + ": " + aws.ToString(res.ErrorMessage)
			failed = append(failed, batch[i])
			p.cfg.Observer.RecordRetried(aws.ToString(res.ErrorCode))
		}
		p.lim.outcome(throttled, false)
		p.cfg.Observer.PutRecords(len(batch), size, len(failed), nil, time.Since(start))
		if len(failed) == 0 || p.giveUp(failed, attempt) {
			return
		}
		batch = failed
	}
}

// giveUp tells the records of batch ErrRetriesExhausted, with the last
// refusal, when attempt (from 0) was the last MaxAttempts allows each of
// them: every record of a retried batch has been in every call since the
// first.
func (p *Producer) giveUp(batch []*record, attempt int) bool {
	if p.cfg.MaxAttempts == 0 || attempt+1 < p.cfg.MaxAttempts {
		return false
	}
	for _, r := range batch {
		r.done(fmt.Errorf("%w (%d attempts; last: %s)", ErrRetriesExhausted, attempt+1, r.last))
	}
	return true
}
