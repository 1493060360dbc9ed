package backoff_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/internal/backoff"
)

func TestDelayWithoutJitter(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name    string
		policy  backoff.Policy
		attempt int
		want    time.Duration
	}{
		{"first attempt waits Base", backoff.Policy{Base: 100 * ms, Max: time.Second}, 0, 100 * ms},
		{"doubles per attempt", backoff.Policy{Base: 100 * ms, Max: time.Second}, 3, 800 * ms},
		{"capped at Max", backoff.Policy{Base: 100 * ms, Max: time.Second}, 4, time.Second},
		{"Max below Base", backoff.Policy{Base: time.Second, Max: 100 * ms}, 0, 100 * ms},
		{"negative attempt is the first", backoff.Policy{Base: 100 * ms, Max: time.Second}, -5, 100 * ms},
		{"huge attempt stays at Max", backoff.Policy{Base: 100 * ms, Max: time.Second}, 1 << 40, time.Second},
		{"zero Policy never waits", backoff.Policy{}, 7, 0},
		{"negative Jitter is none", backoff.Policy{Base: 100 * ms, Jitter: -1}, 1, 200 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Delay(tt.attempt); got != tt.want {
				t.Errorf("%+v.Delay(%d) = %s; want %s", tt.policy, tt.attempt, got, tt.want)
			}
		})
	}
}

func TestDelayWithoutMaxDoesNotOverflow(t *testing.T) {
	p := backoff.Policy{Base: time.Hour}
	if got, floor := p.Delay(1<<40), time.Duration(1<<62); got < floor {
		t.Errorf("%+v.Delay(1<<40) = %s; want at least %s (no wrap-around)", p, got, floor)
	}
}

func TestDelayJitterStaysInRange(t *testing.T) {
	tests := []struct {
		jitter float64
		lo, hi time.Duration
	}{
		{1, 0, 400 * time.Millisecond},
		{0.5, 200 * time.Millisecond, 400 * time.Millisecond},
		{2, 0, 400 * time.Millisecond}, // clamped to 1
	}
	for _, tt := range tests {
		p := backoff.Policy{Base: 100 * time.Millisecond, Max: time.Second, Jitter: tt.jitter}
		seen := map[time.Duration]bool{}
		for range 1000 {
			d := p.Delay(2)
			if d < tt.lo || d > tt.hi {
				t.Fatalf("Jitter %g: Delay(2) = %s; want within [%s, %s]", tt.jitter, d, tt.lo, tt.hi)
			}
			seen[d] = true
		}
		if len(seen) < 100 {
			t.Errorf("Jitter %g: %d distinct delays in 1000; want them spread", tt.jitter, len(seen))
		}
	}
}

func TestSleepReturnsPromptlyWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	err := backoff.Sleep(ctx, time.Hour)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep after cancel = %v; want context.Canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Sleep returned %s after cancel; want promptly", took)
	}
}

func TestWaitReturnsDeadlineError(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	p := backoff.Policy{Base: time.Hour, Jitter: 1}
	if err := p.Wait(ctx, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past the deadline = %v; want context.DeadlineExceeded", err)
	}
}

func TestSleepWithEndedContextDoesNotWait(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, d := range []time.Duration{-1, 0, time.Hour} {
		if err := backoff.Sleep(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(%s) with an ended context = %v; want context.Canceled", d, err)
		}
	}
}

func TestSleepWaitsTheDuration(t *testing.T) {
	start := time.Now()
	if err := backoff.Sleep(t.Context(), 20*time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v; want nil", err)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("Sleep(20ms) returned after %s; want at least 20ms", took)
	}
	if err := backoff.Sleep(t.Context(), 0); err != nil {
		t.Errorf("Sleep(0) = %v; want nil", err)
	}
}
