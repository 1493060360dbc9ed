package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
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
		if !sleep(ctx, backoff(50*time.Millisecond, in.cfg.RetryMax, attempt+1)) {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// backoff is full-jitter exponential: uniform in [0, min(max, base*2^attempt)].
func backoff(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if d <= 0 {
		return 0
	}
	return rand.N(d) + 1
}

// sleep waits d or until ctx ends; it reports whether the full wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
