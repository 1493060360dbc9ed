package dev

import (
	"encoding/json"
	"fmt"
	"time"
)

// step prints one start-up step to Config.Progress, with the time since
// Start began.
func (s *System) step(began time.Time, format string, args ...any) {
	if s.cfg.Progress == nil {
		return
	}
	fmt.Fprintf(s.cfg.Progress, "bowline dev: %5.1fs %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
}

// EmulatorDied delivers the first emulator child (DynamoDB Local, fauxqs,
// kinesis-local) that exits while the system runs, as a
// *localstack.ExitError. Nil (never ready) when the stack was not started
// by Start (Config.Stack).
func (s *System) EmulatorDied() <-chan error {
	if s.stack == nil || !s.stack.owned {
		return nil
	}
	return s.stack.Died()
}

// Summary is what a run did, printed once when Run stops.
type Summary struct {
	// Ran is how long the system ran; Stop how long stopping took.
	Ran  time.Duration `json:"ran_ns"`
	Stop time.Duration `json:"stop_ns"`
	// Figures are the counters at the stop (no DLQ read: the queue may
	// be gone; DLQDepth is -1).
	Figures Figures `json:"figures"`
}

// summary reads the counters without any call to the stack.
func (s *System) summary(ran, stop time.Duration) Summary {
	c := &s.counters
	f := Figures{
		At: time.Now(), Samples: c.samples.Load(), TelemetryMessages: c.telemetry.Load(),
		Emitted: c.emitted.Load(), Duplicates: c.duplicates.Load(), Rejected: c.rejected.Load(),
		Completed: c.completed.Load(), Retried: c.retried.Load(), Dead: c.dead.Load(), DLQDepth: -1,
	}
	if s.clock != nil {
		f.SimTime = s.clock.Now()
	}
	f.ChainsIntact, f.ChainsChecked, f.ChainsAt = s.chains.latest()
	return Summary{Ran: ran, Stop: stop, Figures: f}
}

// Line is the summary as one line (after "bowline dev: stopping... ").
func (m Summary) Line() string {
	f := m.Figures
	chains := "chains not checked"
	if !f.ChainsAt.IsZero() {
		chains = fmt.Sprintf("chains %d/%d intact", f.ChainsIntact, f.ChainsChecked)
	}
	return fmt.Sprintf("stopped in %s after %s: %d samples to Kinesis, %d events emitted, %d deliveries completed, %d dead, %s",
		m.Stop.Round(100*time.Millisecond), m.Ran.Round(time.Second), f.Samples, f.Emitted, f.Completed, f.Dead, chains)
}

// JSON is the summary as one JSON line: {"stopped": {...}}.
func (m Summary) JSON() string {
	b, _ := json.Marshal(map[string]Summary{"stopped": m})
	return string(b)
}
