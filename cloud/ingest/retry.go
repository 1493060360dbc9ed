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
// held (unacknowledged) rather than dropped.
func (in *Ingester) retry(ctx context.Context, what string, f func() error) error {
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
		in.log.Warn("transient failure; retrying", "what", what, "attempt", attempt+1, "err", err)
		policy := backoff.Policy{Base: 50 * time.Millisecond, Max: in.cfg.RetryMax, Jitter: 1}
		if policy.Wait(ctx, attempt) != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}
