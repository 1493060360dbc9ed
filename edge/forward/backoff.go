package forward

import (
	"math/rand/v2"
	"time"
)

// backoff is exponential with "equal jitter": attempt n waits a random
// duration in [d/2, d] with d = min(max, min*2^n), so a fleet of gateways
// that lost the same broker does not reconnect in lockstep.
type backoff struct {
	min, max time.Duration
	n        int
}

func (b *backoff) next() time.Duration {
	d := b.min << min(b.n, 30)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.n++
	half := d / 2
	return half + rand.N(d-half+1)
}

func (b *backoff) reset() { b.n = 0 }
