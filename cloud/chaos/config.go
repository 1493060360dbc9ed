package chaos

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Inbox modes of the worker processes.
const (
	InboxBowline = "bowline"
	InboxSeed    = "seed"
)

// Config configures a run. Zero fields take the defaults of Default or
// Quick.
type Config struct {
	// Seed draws the fault schedule and the simulated bowls' readings.
	Seed uint64
	// Root is the repository root (go build runs there). Required.
	Root string
	// StackRoot is where the local emulators are installed (the folder
	// holding deploy/local, localstack.Config.Root); default Root. It
	// differs from Root when the code under test is a worktree without
	// the installed emulators.
	StackRoot string
	// Inboxes are the worker modes to run, each with the same schedule.
	// Default both, Bowline's first.
	Inboxes []string
	// Gateways and BowlsPerGateway shape the edge; at least 2 gateways.
	Gateways, BowlsPerGateway int
	// SimDuration is how long the bowls run and Rate their load-cell
	// sample rate in Hz: readings offered = gateways x bowls x duration x
	// rate. The bowls run in real time (simulate --speed 1): ingest refuses
	// samples stamped more than 5 minutes ahead of receipt, and a faster
	// clock would run ahead of the gateways' by more than that.
	SimDuration time.Duration
	Rate        int
	// DeviceFaults is the number of firmware fault frames each bowl
	// raises, spread over SimDuration: each becomes one bowl.device_fault
	// event, and the simulator's truth lists them, so the chain can be
	// checked against the truth exactly (meals are too rare in a run of
	// this length to reach the event load alone).
	DeviceFaults int
	// Orders is the number of paid orders placed through the API.
	Orders int
	// Faults is the number of faults in the schedule, spread over Window.
	Faults int
	Window time.Duration
	// Settle bounds the wait for the system to drain after the faults.
	Settle time.Duration
	// Keep leaves the work directory (process logs, outboxes, truth)
	// behind for a post-mortem.
	Keep bool
	// Logger receives progress; default discards.
	Logger *slog.Logger `json:"-"`
}

// Default is the full run: 10 bowls at 50 Hz for 4 minutes (120,000
// readings offered), 2,100 device faults plus the bowls' own meals and
// refills, 500 paid orders, 60 faults.
func Default() Config {
	return Config{
		Gateways: 2, BowlsPerGateway: 5, SimDuration: 4 * time.Minute, Rate: 50, DeviceFaults: 210,
		Orders: 500, Faults: 60, Window: 4 * time.Minute, Settle: 3 * time.Minute,
	}
}

// Quick is the small run of ./scripts/test.
func Quick() Config {
	return Config{
		Gateways: 2, BowlsPerGateway: 1, SimDuration: 30 * time.Second, Rate: 20, DeviceFaults: 5,
		Orders: 30, Faults: 14, Window: 30 * time.Second, Settle: 90 * time.Second,
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Root == "":
		return errors.New("chaos config: Root is empty")
	case c.Gateways < 2:
		return fmt.Errorf("chaos config: Gateways %d; want at least 2", c.Gateways)
	case c.BowlsPerGateway < 1 || c.Rate < 1 || c.Rate > 50 || c.SimDuration <= 0:
		return fmt.Errorf("chaos config: bowls %d, rate %d Hz, duration %v: want >= 1 bowl, 1-50 Hz, a positive duration", c.BowlsPerGateway, c.Rate, c.SimDuration)
	case c.Orders < 0 || c.Faults < 0 || c.DeviceFaults < 0 || c.Window <= 0 || c.Settle <= 0:
		return errors.New("chaos config: Orders and Faults must not be negative, Window and Settle must be positive")
	}
	for _, m := range c.Inboxes {
		if m != InboxBowline && m != InboxSeed {
			return fmt.Errorf("chaos config: inbox %q: want bowline or seed", m)
		}
	}
	return nil
}
