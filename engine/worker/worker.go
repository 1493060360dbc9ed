package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/backoff"
)

// Worker is the durable consumer. Build it with New; Run it once.
type Worker struct {
	cfg          Config
	log          *slog.Logger
	obs          Observer
	subs         []engine.Subscription
	infra        backoff.Policy
	handlerRetry backoff.Policy // between in-place attempts of a failed handler

	// Set by Run.
	pool       *pool
	deletes    chan *message
	visibility time.Duration // the queue's visibility timeout
	margin     time.Duration // extend a held message's visibility when less is left
	tick       time.Duration // how often the keeper looks
	stopping   context.Context
}

// New fills cfg's defaults, validates it and returns a Worker.
func New(cfg Config) (*Worker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var durable []engine.Subscription
	for _, s := range cfg.Subscriptions {
		if s.Lane == engine.Durable {
			durable = append(durable, s)
		}
	}
	return &Worker{
		cfg: cfg, log: cfg.Logger.With("worker", cfg.WorkerID), obs: cfg.Observer, subs: durable,
		infra:        backoff.Policy{Base: cfg.InfraBackoffBase, Max: cfg.InfraBackoffMax, Jitter: 0.5},
		handlerRetry: backoff.Policy{Base: cfg.RetryBackoffBase, Max: cfg.RetryBackoffMax, Jitter: 0.5},
	}, nil
}

// ID returns the worker id written into inbox rows.
func (w *Worker) ID() string { return w.cfg.WorkerID }

// Run consumes until ctx ends, lets in-flight handlers finish within
// ShutdownGrace, gives back the messages it holds that no handler started,
// and returns nil. It fails at start when the lease is not shorter than
// the queue's visibility timeout.
func (w *Worker) Run(ctx context.Context) error {
	vis, err := w.checkVisibility(ctx)
	if err != nil {
		return err
	}
	w.visibility = vis
	// Extend when a third of the visibility (at least two heartbeats) is
	// left, so one failed extension still leaves time for the next.
	w.margin = max(vis/3, 2*w.cfg.Heartbeat)
	w.tick = min(w.cfg.Heartbeat, w.margin/2)
	w.pool = newPool(w.cfg.MaxInFlight, w.cfg.MaxParked)
	w.deletes = make(chan *message, w.cfg.MaxInFlight)
	w.stopping = ctx

	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(w.cfg.ShutdownGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelWork()
		case <-work.Done():
		}
	})
	defer stop()

	keeperStop, deleterDone := make(chan struct{}), make(chan struct{})
	var keeper sync.WaitGroup
	keeper.Go(func() { w.keep(keeperStop) })
	go func() {
		defer close(deleterDone)
		w.runDeleter(w.deletes)
	}()

	w.log.Info("worker started", "queue", w.cfg.QueueURL, "subscriptions", len(w.subs), "pollers", w.cfg.Pollers,
		"max_in_flight", w.cfg.MaxInFlight, "visibility", vis, "max_run_time", w.cfg.MaxRunTime)
	var pollers sync.WaitGroup
	for range w.cfg.Pollers {
		pollers.Go(func() { w.poll(ctx, work) })
	}
	pollers.Wait()
	w.pool.wg.Wait() // every lane has finished or given its messages back
	close(w.deletes)
	<-deleterDone // the last deletes are answered
	close(keeperStop)
	keeper.Wait()
	w.log.Info("worker stopped")
	return nil
}

// checkVisibility reads the queue's visibility timeout and checks the lease
// against it. A queue that reports none is assumed to have one lease plus
// two heartbeats long.
func (w *Worker) checkVisibility(ctx context.Context) (time.Duration, error) {
	out, err := w.cfg.Queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(w.cfg.QueueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout},
	})
	if err != nil {
		return 0, fmt.Errorf("read attributes of queue %s: %w", w.cfg.QueueURL, err)
	}
	secs, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		assumed := w.cfg.Lease + 2*w.cfg.Heartbeat
		w.log.Warn("queue reports no visibility timeout; cannot check the lease against it", "queue", w.cfg.QueueURL, "assumed", assumed)
		return assumed, nil
	}
	vis := time.Duration(secs) * time.Second
	if w.cfg.Lease >= vis {
		return 0, fmt.Errorf("queue %s visibility %v, lease %v: %w", w.cfg.QueueURL, vis, w.cfg.Lease, ErrLeaseTooLong)
	}
	return vis, nil
}

// poll receives until ctx ends, while there is room in the pool, and files
// what it gets into the groups' lanes without waiting for them; work is the
// context of message handling. A receive in flight when ctx ends is
// finished (at most WaitTime), not abandoned.
func (w *Worker) poll(ctx, work context.Context) {
	for failures := 0; ctx.Err() == nil; {
		n := w.pool.acquire(ctx, w.cfg.MaxMessages)
		if n == 0 {
			return
		}
		start := time.Now()
		// The receive is not cut short when ctx ends: a long poll abandoned
		// by the client can still hand messages out on the server, which
		// then stay invisible for a whole visibility timeout. What it
		// returns after ctx ended is given back by the lanes.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.WaitTime+sqsCallTimeout)
		out, err := w.cfg.Queue.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(w.cfg.QueueURL),
			MaxNumberOfMessages: int32(n),
			WaitTimeSeconds:     int32(w.cfg.WaitTime / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{
				sqstypes.MessageSystemAttributeNameApproximateReceiveCount,
				sqstypes.MessageSystemAttributeNameMessageGroupId,
			},
		})
		cancel()
		if err != nil {
			w.pool.release(n)
			if ctx.Err() != nil {
				return
			}
			failures++
			w.log.Warn("receive failed; retrying", "err", err)
			_ = backoff.Sleep(ctx, time.Duration(min(failures, 6))*250*time.Millisecond)
			continue
		}
		failures = 0
		w.pool.release(n - len(out.Messages))
		if len(out.Messages) == 0 {
			continue
		}
		w.obs.Received(len(out.Messages))
		w.pool.add(out.Messages, start, w.visibility, func(l *lane) { w.runLane(work, l) })
	}
}

// runLane handles a group's messages one after another, in the order SQS
// gave them, until the lane is empty. A failed handler is retried in place
// (handleMessage), with the rest of the lane held behind it. A message that
// is given back unfinished (another worker's claim, shutdown) stays in
// flight for its retry delay, and the rest of the lane is given back
// untouched, so SQS, which locks a group while any of its messages is in
// flight, hands them out again only after it: order within the group
// holds. Once Run's context has ended, messages not yet started are given
// back.
func (w *Worker) runLane(ctx context.Context, l *lane) {
	for {
		if w.stopping.Err() != nil {
			w.giveBackRest(l)
		}
		m, ok := w.pool.next(l)
		if !ok {
			return
		}
		if !w.handleMessage(ctx, m) {
			w.giveBackRest(l)
		}
	}
}

// giveBackRest gives back the lane's queued messages at once, last first:
// an emulator that puts a given-back message at the head of its group then
// keeps the original order (SQS keeps it either way).
func (w *Worker) giveBackRest(l *lane) {
	rest := w.pool.drain(l)
	for i, j := 0, len(rest)-1; i < j; i, j = i+1, j-1 {
		rest[i], rest[j] = rest[j], rest[i]
	}
	w.giveBack(rest, 0)
}
