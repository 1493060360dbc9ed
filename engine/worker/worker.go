package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
)

// Worker is the durable consumer. Build it with New; Run it once.
type Worker struct {
	cfg  Config
	log  *slog.Logger
	obs  Observer
	subs []engine.Subscription
}

// New returns a Worker for cfg.
func New(cfg Config) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	var durable []engine.Subscription
	for _, s := range cfg.Subscriptions {
		if s.Lane == engine.Durable {
			durable = append(durable, s)
		}
	}
	return &Worker{cfg: cfg, log: cfg.Logger.With("worker", cfg.WorkerID), obs: cfg.Observer, subs: durable}, nil
}

// ID returns the worker id written into inbox rows.
func (w *Worker) ID() string { return w.cfg.WorkerID }

// Run consumes until ctx ends, lets in-flight handlers finish within
// ShutdownGrace, and returns nil. It fails at start when the lease is not
// shorter than the queue's visibility timeout.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.checkVisibility(ctx); err != nil {
		return err
	}
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
	w.log.Info("worker started", "queue", w.cfg.QueueURL, "subscriptions", len(w.subs), "pollers", w.cfg.Pollers)
	var wg sync.WaitGroup
	for range w.cfg.Pollers {
		wg.Go(func() { w.poll(ctx, work) })
	}
	wg.Wait()
	w.log.Info("worker stopped")
	return nil
}

func (w *Worker) checkVisibility(ctx context.Context) error {
	out, err := w.cfg.Queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(w.cfg.QueueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout},
	})
	if err != nil {
		return fmt.Errorf("read attributes of queue %s: %w", w.cfg.QueueURL, err)
	}
	secs, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		w.log.Warn("queue reports no visibility timeout; cannot check the lease against it", "queue", w.cfg.QueueURL)
		return nil
	}
	if vis := time.Duration(secs) * time.Second; w.cfg.Lease >= vis {
		return fmt.Errorf("queue %s visibility %v, lease %v: %w", w.cfg.QueueURL, vis, w.cfg.Lease, ErrLeaseTooLong)
	}
	return nil
}

// poll receives until ctx ends; work is the context of message handling.
func (w *Worker) poll(ctx, work context.Context) {
	for failures := 0; ctx.Err() == nil; {
		out, err := w.cfg.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(w.cfg.QueueURL),
			MaxNumberOfMessages: int32(w.cfg.MaxMessages),
			WaitTimeSeconds:     int32(w.cfg.WaitTime / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{
				sqstypes.MessageSystemAttributeNameApproximateReceiveCount,
				sqstypes.MessageSystemAttributeNameMessageGroupId,
			},
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			w.log.Warn("receive failed; retrying", "err", err)
			sleep(ctx, time.Duration(min(failures, 6))*250*time.Millisecond)
			continue
		}
		failures = 0
		if len(out.Messages) == 0 {
			continue
		}
		w.obs.Received(len(out.Messages))
		w.processBatch(work, out.Messages)
	}
}

// processBatch handles a receive: groups run concurrently, messages of one
// group in order. When a message is not finished, the rest of its group in
// this batch is released untouched, so order within the group holds.
func (w *Worker) processBatch(ctx context.Context, msgs []sqstypes.Message) {
	var order []string
	groups := map[string][]sqstypes.Message{}
	for _, m := range msgs {
		g := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], m)
	}
	var wg sync.WaitGroup
	for _, g := range order {
		wg.Go(func() {
			ms := groups[g]
			for i, m := range ms {
				if !w.handleMessage(ctx, m) {
					// Released last to first: an emulator that puts a
					// released message back at the head of its group then
					// keeps the original order (SQS keeps it either way).
					rest := ms[i+1:]
					for j := len(rest) - 1; j >= 0; j-- {
						w.setVisibility(ctx, rest[j], 0)
					}
					return
				}
			}
		})
	}
	wg.Wait()
}

// outcome of one (event, subscription) in this receive.
type outcome int

const (
	outDone    outcome = iota // completed, now or before
	outDead                   // dead, now or before
	outPending                // retry later: the handler failed, or another worker holds the claim
	outInfra                  // retry soon: a claim or state write failed
)

// infraRetry is the visibility after an infrastructure failure (a claim or
// inbox write that failed), so a transient fault costs a second, not the
// queue's whole visibility timeout.
const infraRetry = time.Second

// handleMessage processes one message and reports whether it is finished
// (deleted).
func (w *Worker) handleMessage(ctx context.Context, m sqstypes.Message) bool {
	receives, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	log := w.log.With("message_id", aws.ToString(m.MessageId), "receive", receives)
	env, err := engine.DecodeImageJSON([]byte(aws.ToString(m.Body)))
	if err != nil {
		return w.poison(ctx, m, receives, err, log)
	}
	log = log.With("event_id", env.ID, "type", env.Type, "tenant", env.Tenant)
	subs := engine.Match(w.subs, engine.Durable, env.Type)
	if len(subs) == 0 && w.cfg.Declared != nil && w.cfg.Declared(env.Type) {
		log.Debug("declared event type has no durable subscriber")
		return w.delete(ctx, m, log)
	}
	if len(subs) == 0 {
		log.Warn("event matched no durable subscriber")
		w.obs.Unmatched(env.Type)
		if err := w.cfg.DeadLetters.CountUnmatched(ctx, env.Type); err != nil {
			log.Warn("persist unmatched count failed", "err", err)
		}
		return w.delete(ctx, m, log)
	}
	// An event's subscriptions are independent (each has its own inbox
	// row), so they run concurrently; order holds between events of a group.
	outcomes := make([]outcome, len(subs))
	var wg sync.WaitGroup
	for i, sub := range subs {
		wg.Go(func() {
			outcomes[i] = w.runSubscription(ctx, m, env, sub, receives, log.With("subscription", sub.Name))
		})
	}
	wg.Wait()
	pending, infra, dead := false, false, false
	for _, o := range outcomes {
		switch o {
		case outPending:
			pending = true
		case outInfra:
			infra = true
		case outDead:
			dead = true
		}
	}
	switch {
	case infra:
		w.setVisibility(ctx, m, max(infraRetry, w.cfg.RetryDelay))
		return false
	case pending:
		if w.cfg.RetryDelay > 0 {
			w.setVisibility(ctx, m, w.cfg.RetryDelay)
		}
		return false
	}
	if dead && !w.forwardToDLQ(ctx, m, log) {
		return false
	}
	return w.delete(ctx, m, log)
}

func (w *Worker) runSubscription(ctx context.Context, m sqstypes.Message, env engine.Envelope, sub engine.Subscription, receives int, log *slog.Logger) outcome {
	claim, err := w.cfg.Inbox.Claim(ctx, env.ID, sub.Name, w.cfg.WorkerID, w.cfg.Lease)
	switch {
	case errors.Is(err, inbox.ErrCompleted):
		w.obs.Claim(sub.Name, ClaimCompleted)
		return outDone
	case errors.Is(err, inbox.ErrDead):
		w.obs.Claim(sub.Name, ClaimDead)
		return outDead
	case errors.Is(err, inbox.ErrHeld):
		w.obs.Claim(sub.Name, ClaimHeld)
		log.Info("claim held by another worker; leaving the message", "err", err)
		return outPending
	case err != nil:
		w.obs.Claim(sub.Name, ClaimError)
		log.Warn("claim failed; leaving the message", "err", err)
		return outInfra
	}
	w.obs.Claim(sub.Name, ClaimTaken)
	start := time.Now()
	herr := w.runHandler(ctx, m, env, sub, claim, log)
	took := time.Since(start)
	// Writes after the handler use a context that survives shutdown, so a
	// finished handler's result is not lost to a cancelled context.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if herr == nil {
		if err := w.cfg.Inbox.Complete(wctx, claim); err != nil {
			w.obs.Handled(sub.Name, HandledLost, took)
			log.Warn("handler succeeded but the claim could not be completed", "err", err)
			return afterWriteFailure(err)
		}
		w.obs.Handled(sub.Name, HandledOK, took)
		return outDone
	}
	if ctx.Err() != nil {
		// Shutdown cut the handler short: not the handler's failure.
		_ = w.cfg.Inbox.Release(wctx, claim, herr)
		w.obs.Handled(sub.Name, HandledRetry, took)
		log.Info("handler interrupted by shutdown; released", "err", herr)
		return outPending
	}
	last := receives >= w.cfg.MaxReceiveCount
	if errors.Is(herr, ErrTerminal) || last {
		letter := deadletter.Letter{
			Tenant: env.Tenant, EventID: env.ID, EventType: env.Type, Subscription: sub.Name,
			Error: herr.Error(), Attempts: claim.Attempts, ReceiveCount: receives,
			MessageID: aws.ToString(m.MessageId), GroupID: m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)],
		}
		// The letter first: a crash between the two leaves a pending row
		// (retried) rather than a dead row without its letter.
		if err := w.cfg.DeadLetters.Record(wctx, letter); err != nil {
			log.Error("write dead letter failed; releasing for retry", "err", err)
			_ = w.cfg.Inbox.Release(wctx, claim, herr)
			w.obs.Handled(sub.Name, HandledRetry, took)
			return outPending
		}
		if err := w.cfg.Inbox.MarkDead(wctx, claim, herr); err != nil {
			log.Warn("mark dead failed", "err", err)
			w.obs.Handled(sub.Name, HandledLost, took)
			return afterWriteFailure(err)
		}
		w.obs.DeadLetter(sub.Name)
		w.obs.Handled(sub.Name, HandledDead, took)
		log.Error("subscription dead-lettered", "err", herr, "terminal", errors.Is(herr, ErrTerminal), "attempts", claim.Attempts)
		return outDead
	}
	if err := w.cfg.Inbox.Release(wctx, claim, herr); err != nil {
		log.Warn("release failed; the lease will expire instead", "err", err)
	}
	w.obs.Handled(sub.Name, HandledRetry, took)
	log.Warn("handler failed; leaving the message to SQS for retry", "err", herr, "attempts", claim.Attempts)
	return outPending
}

// afterWriteFailure classifies a failed inbox write after the handler ran:
// a lost lease means another worker owns the row now (leave the message to
// it); anything else is an infrastructure fault worth a quick retry.
func afterWriteFailure(err error) outcome {
	if errors.Is(err, inbox.ErrLeaseLost) {
		return outPending
	}
	return outInfra
}

// runHandler runs sub's handler in the event's tenant context with a
// heartbeat that extends the lease and the message visibility. The
// handler's context is cancelled before the lease can expire when the
// heartbeat stops succeeding.
func (w *Worker) runHandler(ctx context.Context, m sqstypes.Message, env engine.Envelope, sub engine.Subscription, claim inbox.Claim, log *slog.Logger) (err error) {
	hctx, cancel := context.WithCancel(engine.ContextFor(ctx, env))
	defer cancel()
	// The watchdog ends the handler's context one heartbeat before the
	// lease expires; each successful heartbeat pushes it back.
	margin := w.cfg.Heartbeat / 2
	watchdog := time.AfterFunc(time.Until(claim.LeaseExpires)-margin, cancel)
	defer watchdog.Stop()
	done := make(chan struct{})
	var hb sync.WaitGroup
	hb.Go(func() {
		t := time.NewTicker(w.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-hctx.Done():
				return
			case <-t.C:
			}
			expires, err := w.cfg.Inbox.Extend(hctx, claim, w.cfg.Lease)
			if err != nil {
				if hctx.Err() != nil {
					return
				}
				if errors.Is(err, inbox.ErrLeaseLost) {
					log.Warn("lease lost during handler; cancelling it", "err", err)
					cancel()
					return
				}
				log.Warn("heartbeat failed", "err", err)
				continue
			}
			watchdog.Reset(time.Until(expires) - margin)
			w.setVisibility(hctx, m, w.cfg.Lease+w.cfg.Heartbeat)
		}
	})
	defer func() {
		close(done)
		hb.Wait()
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("subscription %s: %w: %v", sub.Name, ErrPanic, r)
		}
	}()
	return sub.Handler(hctx, env)
}

func (w *Worker) poison(ctx context.Context, m sqstypes.Message, receives int, cause error, log *slog.Logger) bool {
	log.Error("poison pill: body is not an event; recording and deleting it", "err", cause)
	err := w.cfg.DeadLetters.RecordPoison(ctx, deadletter.Letter{
		MessageID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Error: cause.Error(), ReceiveCount: receives,
		GroupID: m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)],
	})
	if err != nil {
		log.Error("record poison pill failed; leaving the message", "err", err)
		return false
	}
	w.obs.Poison()
	return w.delete(ctx, m, log)
}

func (w *Worker) forwardToDLQ(ctx context.Context, m sqstypes.Message, log *slog.Logger) bool {
	group := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
	_, err := w.cfg.Queue.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(w.cfg.DLQURL), MessageBody: m.Body,
		MessageGroupId: aws.String(group), MessageDeduplicationId: m.MessageId,
	})
	if err != nil {
		log.Error("forward to the dead-letter queue failed; leaving the message", "err", err)
		return false
	}
	w.obs.ForwardedToDLQ()
	return true
}

func (w *Worker) delete(ctx context.Context, m sqstypes.Message, log *slog.Logger) bool {
	_, err := w.cfg.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.cfg.QueueURL), ReceiptHandle: m.ReceiptHandle})
	if err != nil {
		log.Warn("delete failed; the message will be redelivered and skipped", "err", err)
		return false
	}
	w.obs.Deleted()
	return true
}

func (w *Worker) setVisibility(ctx context.Context, m sqstypes.Message, d time.Duration) {
	secs := int32(math.Ceil(d.Seconds()))
	_, err := w.cfg.Queue.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(w.cfg.QueueURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: secs,
	})
	if err != nil && ctx.Err() == nil {
		w.log.Warn("change visibility failed", "message_id", aws.ToString(m.MessageId), "err", err)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
