package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/deadletter"
	"github.com/bowline-iot/bowline/engine/inbox"
	"github.com/bowline-iot/bowline/internal/backoff"
)

// outcome of one (event, subscription) in this receive.
type outcome int

const (
	outDone    outcome = iota // completed, now or before
	outDead                   // dead, now or before
	outRetry                  // the handler failed and has attempts left: retry in place
	outPending                // give the message back: another worker holds the claim, or shutdown cut the run short
	outStopped                // an inbox write kept failing until Run stopped: give the message back
)

// writeTimeout bounds one inbox or dead-letter write, whatever the
// caller's context: a finished handler's result is not lost to shutdown.
const writeTimeout = 30 * time.Second

// handleMessage processes one message and reports whether it is finished
// (queued for its delete). When it is not, the message has been given back
// with its retry visibility.
func (w *Worker) handleMessage(ctx context.Context, m *message) bool {
	_, receives, held := w.pool.snapshot(m)
	if !held {
		return false
	}
	log := w.log.With("message_id", m.id, "receive", receives)
	env, err := decodeChained(m.body)
	if err != nil {
		return w.poison(ctx, m, receives, err, log)
	}
	log = log.With("event_id", env.ID, "type", env.Type, "tenant", env.Tenant)
	subs := engine.Match(w.subs, engine.Durable, env.Type)
	if len(subs) == 0 && w.cfg.Declared != nil && w.cfg.Declared(env.Type) {
		log.Debug("declared event type has no durable subscriber")
		return w.delete(m)
	}
	if len(subs) == 0 {
		log.Warn("event matched no durable subscriber")
		w.obs.Unmatched(env.Type)
		if err := w.cfg.DeadLetters.CountUnmatched(ctx, env.Type); err != nil {
			log.Warn("persist unmatched count failed", "err", err)
		}
		return w.delete(m)
	}
	// An event's subscriptions are independent (each has its own inbox
	// row), so they run concurrently; order holds between events of a group.
	// A subscription whose handler failed with attempts left is retried in
	// place after the retry backoff: the message and the rest of its lane
	// stay held (the keeper extends their visibility), so the events
	// queued behind it spend no receive while it retries.
	outcomes := make([]outcome, len(subs))
	budgets := make([]budget, len(subs))
	for round := 0; ; round++ {
		var wg sync.WaitGroup
		for i, sub := range subs {
			if round > 0 && outcomes[i] != outRetry {
				continue
			}
			wg.Go(func() {
				outcomes[i] = w.runSubscription(ctx, m, env, sub, receives, &budgets[i], log.With("subscription", sub.Name))
			})
		}
		wg.Wait()
		retry, pending, stopped := false, false, false
		for _, o := range outcomes {
			switch o {
			case outRetry:
				retry = true
			case outPending:
				pending = true
			case outStopped:
				stopped = true
			}
		}
		switch {
		case stopped:
			// Shutting down with an inbox write still failing: back to SQS
			// after the longest infrastructure backoff, not at once.
			w.giveBack([]*message{m}, w.cfg.InfraBackoffMax)
			return false
		case pending:
			w.giveBack([]*message{m}, w.retryDelay())
			return false
		}
		if !retry {
			break
		}
		delay := w.handlerRetry.Delay(round)
		// While it waits, the lane holds parked places, not slots: other
		// groups are received meanwhile (MaxParked).
		parked := w.pool.park(m)
		log.Info("retrying in place", "round", round+1, "retry_in", delay, "parked", parked)
		if backoff.Sleep(w.stopping, delay) != nil {
			// Run is stopping: the rows are released, the next receive
			// (this worker's or another's) continues their attempt count.
			w.giveBack([]*message{m}, w.retryDelay())
			return false
		}
		if _, receives, held = w.pool.snapshot(m); !held {
			return false // abandoned by the keeper
		}
	}
	dead := false
	for _, o := range outcomes {
		dead = dead || o == outDead
	}
	if dead && !w.forwardToDLQ(ctx, m, log) {
		w.giveBack([]*message{m}, w.cfg.InfraBackoffMax)
		return false
	}
	return w.delete(m)
}

// budget is the attempt budget of one (event, subscription) in one hold of
// its message: first is the row's Attempts at the hold's first failure.
type budget struct{ first int }

// final reports whether a retryable failure on the claim's attempts ends
// the budget: at MaxAttempts counted on the row, or, for a row already past
// MaxAttempts at the hold's first failure (a redriven dead row), after
// MaxAttempts more.
func (b *budget) final(attempts, maxAttempts int) bool {
	if b.first == 0 {
		b.first = attempts
	}
	limit := maxAttempts
	if b.first > maxAttempts {
		limit = b.first + maxAttempts - 1
	}
	return attempts >= limit
}

// retryDelay is the visibility of a message given back unfinished.
func (w *Worker) retryDelay() time.Duration {
	if w.cfg.RetryDelay > 0 {
		return w.cfg.RetryDelay
	}
	return w.visibility
}

func (w *Worker) runSubscription(ctx context.Context, m *message, env engine.Envelope, sub engine.Subscription, receives int, b *budget, log *slog.Logger) outcome {
	var claim inbox.Claim
	err := w.retry(ctx, "claim", log, isClaimRefusal, func(ctx context.Context) (err error) {
		claim, err = w.cfg.Inbox.Claim(ctx, env.ID, sub.Name, w.cfg.WorkerID, w.cfg.Lease)
		return err
	})
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
		log.Warn("claim failed until shutdown; giving the message back", "err", err)
		return outStopped
	}
	w.obs.Claim(sub.Name, ClaimTaken)
	start := time.Now()
	herr := w.runHandler(ctx, m, env, sub, claim, log)
	took := time.Since(start)
	if herr == nil {
		err := w.retry(ctx, "complete", log, isLeaseLost, func(ctx context.Context) error { return w.cfg.Inbox.Complete(ctx, claim) })
		if err != nil {
			w.obs.Handled(sub.Name, HandledLost, took)
			log.Warn("handler succeeded but the claim could not be completed", "err", err)
			return afterWriteFailure(err)
		}
		w.obs.Handled(sub.Name, HandledOK, took)
		return outDone
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if ctx.Err() != nil {
		// Shutdown cut the handler short: not the handler's failure.
		_ = w.cfg.Inbox.Release(wctx, claim, herr)
		w.obs.Handled(sub.Name, HandledRetry, took)
		log.Info("handler interrupted by shutdown; released", "err", herr)
		return outPending
	}
	// The attempt budget is counted on the row; the receive count is only
	// the safety net: a failure on the receive SQS would not hand out
	// again is final too, so the message reaches the DLQ with its letter.
	exhausted := b.final(claim.Attempts, w.cfg.MaxAttempts)
	last := receives >= w.cfg.MaxReceiveCount
	if errors.Is(herr, ErrTerminal) || exhausted || last {
		letter := deadletter.Letter{
			Tenant: env.Tenant, EventID: env.ID, EventType: env.Type, Subscription: sub.Name,
			Error: herr.Error(), Attempts: claim.Attempts, ReceiveCount: receives,
			MessageID: m.id, GroupID: m.group,
		}
		// The letter first: a crash between the two leaves a pending row
		// (retried) rather than a dead row without its letter.
		err := w.retry(ctx, "record dead letter", log, isIncomplete, func(ctx context.Context) error { return w.cfg.DeadLetters.Record(ctx, letter) })
		if err != nil {
			log.Error("write dead letter failed; releasing for retry", "err", err)
			_ = w.cfg.Inbox.Release(wctx, claim, herr)
			w.obs.Handled(sub.Name, HandledRetry, took)
			return afterWriteFailure(err)
		}
		err = w.retry(ctx, "mark dead", log, isLeaseLost, func(ctx context.Context) error { return w.cfg.Inbox.MarkDead(ctx, claim, herr) })
		if err != nil {
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
	log.Warn("handler failed; retrying in place", "err", herr, "attempts", claim.Attempts)
	return outRetry
}

// afterWriteFailure classifies a failed inbox write after the handler ran:
// a lost lease means another worker owns the row now (leave the message to
// it); anything else kept failing until Run stopped.
func afterWriteFailure(err error) outcome {
	if errors.Is(err, inbox.ErrLeaseLost) {
		return outPending
	}
	return outStopped
}

// The answers of an inbox or dead-letter write that retrying cannot change.
func isClaimRefusal(err error) bool {
	var ce *inbox.ClaimError
	return errors.As(err, &ce)
}
func isLeaseLost(err error) bool  { return errors.Is(err, inbox.ErrLeaseLost) }
func isIncomplete(err error) bool { return errors.Is(err, deadletter.ErrIncomplete) }

// retry runs op until it succeeds or fails with an answer (final reports
// which errors are answers rather than faults), or until ctx ends. Any
// other error is an infrastructure fault (throttling, 5xx, a timeout, a
// broken connection): the message stays in flight, the keeper extends its
// visibility, and op is retried after the infrastructure backoff, so an
// outage of the inbox costs time but no receive, no dead letter and no
// reordering. Each attempt has writeTimeout, from a context that survives
// ctx's end (a finished handler's result gets its write), but no new
// attempt starts once ctx has ended.
func (w *Worker) retry(ctx context.Context, what string, log *slog.Logger, final func(error) bool, op func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		err := op(actx)
		cancel()
		if err == nil || final(err) || ctx.Err() != nil {
			return err
		}
		w.obs.InfraRetry(what)
		delay := w.infra.Delay(attempt)
		if attempt == 0 || delay >= w.cfg.InfraBackoffMax {
			log.Warn(what+" failed; retrying with the message held", "err", err, "attempt", attempt+1, "retry_in", delay)
		}
		if backoff.Sleep(ctx, delay) != nil {
			return err
		}
	}
}

// runHandler runs sub's handler in the event's tenant context, for at most
// MaxRunTime, with a heartbeat that extends the lease. The handler's
// context is cancelled before the lease can expire when the heartbeat stops
// succeeding, and at MaxRunTime (cause ErrRunTimeExceeded), after which the
// run is a retryable failure unless it returns nil.
func (w *Worker) runHandler(ctx context.Context, m *message, env engine.Envelope, sub engine.Subscription, claim inbox.Claim, log *slog.Logger) (err error) {
	start := time.Now()
	w.pool.startRun(m, start.Add(w.cfg.MaxRunTime+w.cfg.Heartbeat))
	defer w.pool.endRun(m)
	rctx, cancelRun := context.WithTimeoutCause(engine.ContextFor(ctx, env), w.cfg.MaxRunTime, ErrRunTimeExceeded)
	defer cancelRun()
	hctx, cancel := context.WithCancel(rctx)
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
		if err != nil && errors.Is(context.Cause(rctx), ErrRunTimeExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("subscription %s: %w (%v): %w", sub.Name, ErrRunTimeExceeded, w.cfg.MaxRunTime, err)
		}
	}()
	return sub.Handler(hctx, env)
}

func (w *Worker) poison(ctx context.Context, m *message, receives int, cause error, log *slog.Logger) bool {
	var refused *notChainedError
	if errors.As(cause, &refused) {
		log.Error("refused: body is not a chained event row; recording it as a poison pill and deleting it", "reason", refused.Reason, "err", cause)
	} else {
		log.Error("poison pill: body is not an event; recording and deleting it", "err", cause)
	}
	letter := deadletter.Letter{MessageID: m.id, Body: m.body, Error: cause.Error(), ReceiveCount: receives, GroupID: m.group}
	err := w.retry(ctx, "record poison pill", log, func(error) bool { return false }, func(ctx context.Context) error {
		return w.cfg.DeadLetters.RecordPoison(ctx, letter)
	})
	if err != nil {
		log.Error("record poison pill failed; giving the message back", "err", err)
		w.giveBack([]*message{m}, w.cfg.InfraBackoffMax)
		return false
	}
	w.obs.Poison()
	if refused != nil {
		w.obs.NotChained(refused.Reason)
	}
	return w.delete(m)
}

// forwardToDLQ sends m to the dead-letter queue (same body and group,
// deduplication id = message id, so a repeat within five minutes is
// dropped by SQS), retrying a failing send like an inbox write.
func (w *Worker) forwardToDLQ(ctx context.Context, m *message, log *slog.Logger) bool {
	err := w.retry(ctx, "forward to the dead-letter queue", log, func(error) bool { return false }, func(ctx context.Context) error {
		_, err := w.cfg.Queue.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(w.cfg.DLQURL), MessageBody: aws.String(m.body),
			MessageGroupId: aws.String(m.group), MessageDeduplicationId: aws.String(m.id),
		})
		return err
	})
	if err != nil {
		log.Error("forward to the dead-letter queue failed; giving the message back", "err", err)
		return false
	}
	w.obs.ForwardedToDLQ()
	return true
}

// delete queues m for the deleter; m is finished.
func (w *Worker) delete(m *message) bool {
	w.deletes <- m
	return true
}
