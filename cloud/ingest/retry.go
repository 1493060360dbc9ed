package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bowline-iot/bowline/internal/backoff"
)

// permanent marks an error retry must not retry.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// retry runs f until it succeeds, fails permanently, or ctx ends, backing off
// between transient failures: a message that cannot be made durable now is
// held (unacknowledged) rather than dropped. Infrastructure failures
// (access denied, a missing table: failureCause "unavailable") are held
// like any transient one, never turned into rejections, and logged at
// ERROR since they need an operator; every retry is counted under op
// (Observer.Held).
func (in *Ingester) retry(ctx context.Context, op, what string, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		var p permanent
		if err == nil {
			return nil
		}
		if errors.As(err, &p) {
			return p.error
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		cause := failureCause(err)
		in.cfg.Observer.Held(op, cause)
		if cause == "unavailable" {
			in.log.Error("DynamoDB refuses access or a table is missing: message held unacknowledged until an operator fixes it",
				"what", what, "attempt", attempt+1, "err", err)
		} else {
			in.log.Warn("transient failure; retrying", "what", what, "attempt", attempt+1, "err", err)
		}
		policy := backoff.Policy{Base: 50 * time.Millisecond, Max: in.cfg.RetryMax, Jitter: 1}
		if policy.Wait(ctx, attempt) != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}
