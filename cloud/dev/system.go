package dev

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/console"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/rules"
)

// Tuning of the in-process worker and consumers.
const (
	// workerWait is the long-poll wait: short, so Close is quick.
	workerWait = 2 * time.Second
	// workerRetryDelay is the visibility after a retryable failure.
	workerRetryDelay = time.Second
	// chainEvery is the pause between background chain verifications.
	chainEvery = 5 * time.Second
)

// System is the whole Bowline system, running. Build it with Start and
// stop it with Close.
type System struct {
	cfg   Config
	stack *stack
	plan  []*Bowl
	clock *simClock

	app      *app.App // the one composition root: clients, queue URLs, the one engine
	fakes    *fakes.Servers
	console  *console.Console
	apiURL   string
	metrics  string // the metrics listener's URL, loopback, not the API's
	counters counters
	chains   chainWatch
	dlqURL   string
	iotURL   string            // the local IoT data plane endpoint (acknowledgements)
	rules    *rules.Runner     // the topic rules' stand-in
	consumer *durable.Consumer // the telemetry stream's consumer
	tempDir  string
	simDone  chan struct{}

	group  *app.Group // every part, and the cleanups after them
	runCtx context.Context
}

// Start fills cfg's defaults, validates it and starts everything: the stack (unless
// cfg.Stack is given), provisioning, the cloud services and the bowls with
// their agents. It returns once all of it runs; ctx bounds the start only.
func Start(ctx context.Context, cfg Config) (*System, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	group := app.NewGroup(context.WithoutCancel(ctx), cfg.Logger)
	s := &System{cfg: cfg, group: group, runCtx: group.Context(), simDone: make(chan struct{})}
	began := time.Now()
	ok := false
	defer func() {
		if !ok {
			_ = s.Close()
		}
	}()
	dir := cfg.DataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "bowline-dev-")
		if err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		s.tempDir, dir = d, d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	s.cfg.DataDir = dir
	s.plan = planBowls(&s.cfg, dir)

	if s.cfg.Stack == nil {
		s.step(began, "starting the emulators (DynamoDB Local, fauxqs, kinesis-local) and the MQTT broker")
	}
	st, err := startStack(ctx, &s.cfg)
	if err != nil {
		return nil, err
	}
	s.stack = st
	s.onClose(st.close)
	reg := app.NewRegistry()
	if s.app, err = app.Open(app.Config{AWS: st.aws, Names: s.cfg.Names, Registry: reg, Logger: s.cfg.Logger}); err != nil {
		return nil, err
	}
	s.onClose(s.app.Close)
	// The status line and chain check exist only here: their calls are
	// recorded as bowline dev's own (app.PartDev).
	if s.dlqURL, err = s.app.Part(app.PartDev).QueueURL(ctx, s.cfg.Names.EventsDLQ()); err != nil {
		return nil, err
	}
	s.chains.v = s.app.Part(app.PartDev).Verifier()
	// The clock exists before any service reads it (ingest takes it as its
	// receive time); it stands at Config.Start until the bowls begin.
	s.clock = &simClock{start: s.cfg.Start, speed: s.cfg.Speed}
	s.step(began, "emulators up, stack %q provisioned; starting ingest, the telemetry path, relays, worker and consumers", s.cfg.Names.Stack)
	if err := s.startServices(ctx); err != nil {
		return nil, err
	}
	s.run("chain check", func() error { return s.chains.run(s.runCtx, chainEvery) })
	s.step(began, "services up; starting %d simulated bowls, each with its edge agent", len(s.plan))
	if err := s.startBowls(ctx); err != nil {
		return nil, err
	}
	s.step(began, "bowls up; starting the API and the console")
	if err := s.startAPI(ctx); err != nil {
		return nil, err
	}
	if s.cfg.ShopOrdersPerHour > 0 {
		s.run("shop", func() error { return s.runShop(s.runCtx) })
	}
	s.step(began, "ready")
	ok = true
	return s, nil
}

// onClose registers f to run at Close, after every part stopped, in
// reverse order of registration.
func (s *System) onClose(f func() error) { s.group.OnClose(f) }

// run runs f as a part until Close; its error is logged and kept. The
// returned channel is closed when f returns.
func (s *System) run(name string, f func() error) <-chan struct{} {
	return s.group.Go(name, func(context.Context) error { return f() })
}

func (s *System) firstErr() error {
	if err := s.group.Err(); err != nil {
		return err
	}
	return errors.New("no error reported")
}

// Err returns the first error of a part that stopped on its own so far.
func (s *System) Err() error { return s.group.Err() }

// Close stops everything (bowls and agents, services, then the stack if
// Start launched it), removes a temporary data directory, and returns
// what failed. It is safe to call more than once.
func (s *System) Close() error {
	var errs []error
	if err := s.group.Close(); err != nil {
		errs = append(errs, err)
	}
	if s.tempDir != "" {
		if err := os.RemoveAll(s.tempDir); err != nil {
			errs = append(errs, err)
		}
		s.tempDir = ""
	}
	return errors.Join(errs...)
}

// Config returns the configuration with every default filled in
// (generated tokens and secrets included).
func (s *System) Config() Config { return s.cfg }

// APIURL is the API's base URL, "http://host:port".
func (s *System) APIURL() string { return s.apiURL }

// ConsoleURL is the console's address; LoginURL logs a browser in with
// one click (it carries the ops token: for this machine only).
func (s *System) ConsoleURL() string { return s.apiURL + console.Prefix }

// LoginURL is the console's one-click login.
func (s *System) LoginURL() string {
	return s.apiURL + console.Prefix + "login?token=" + url.QueryEscape(s.cfg.Settings.OpsToken)
}

// Console is the running console (tests refresh it).
func (s *System) Console() *console.Console { return s.console }

// Fakes are the fake providers the subscribers call.
func (s *System) Fakes() *fakes.Servers { return s.fakes }

// Bowls are the simulated bowls with their agents.
func (s *System) Bowls() []*Bowl { return s.plan }

// SimDone is closed when the bowls have simulated Config.Duration.
func (s *System) SimDone() <-chan struct{} { return s.simDone }

// SimNow is the bowls' clock.
func (s *System) SimNow() time.Time {
	if s.clock == nil {
		return s.cfg.Start
	}
	return s.clock.Now()
}
