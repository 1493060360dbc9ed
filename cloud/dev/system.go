package dev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/internal/awsenv"
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

	fakes    *fakes.Servers
	apiURL   string
	registry *prometheus.Registry
	counters counters
	chains   chainWatch
	sqs      *sqs.Client
	dlqURL   string
	tempDir  string
	simDone  chan struct{}

	runCtx context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	close  []func() error
}

// Start validates cfg and starts everything: the stack (unless
// cfg.Stack is given), provisioning, the cloud services and the bowls with
// their agents. It returns once all of it runs; ctx bounds the start only.
func Start(ctx context.Context, cfg Config) (*System, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &System{cfg: cfg, runCtx: runCtx, cancel: cancel, simDone: make(chan struct{})}
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

	st, err := startStack(ctx, &s.cfg)
	if err != nil {
		return nil, err
	}
	s.stack = st
	s.onClose(st.close)
	s.sqs = sqs.NewFromConfig(st.aws)
	if s.dlqURL, err = queueURL(ctx, s.sqs, s.cfg.Names.EventsDLQ()); err != nil {
		return nil, err
	}
	s.chains.v = engine.NewVerifier(dynamodb.NewFromConfig(st.aws, awsenv.DynamoDBOptions), s.cfg.Names.EventsTable(), 0)
	if err := s.startServices(ctx); err != nil {
		return nil, err
	}
	s.run("chain check", func() error { return s.chains.run(s.runCtx, chainEvery) })
	if err := s.startBowls(ctx); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// onClose registers f to run at Close, after every goroutine stopped, in
// reverse order of registration.
func (s *System) onClose(f func() error) { s.close = append(s.close, f) }

// run runs f in a goroutine until Close; its error is kept. The returned
// channel is closed when f returns.
func (s *System) run(name string, f func() error) <-chan struct{} {
	done := make(chan struct{})
	s.wg.Go(func() {
		defer close(done)
		if err := f(); err != nil {
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Errorf("%s: %w", name, err))
			s.mu.Unlock()
			s.cfg.Logger.Error("part stopped", "part", name, "err", err)
		}
	})
	return done
}

func (s *System) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) == 0 {
		return errors.New("no error reported")
	}
	return s.errs[0]
}

// Err returns the errors of parts that stopped on their own so far.
func (s *System) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// Close stops everything (bowls and agents, services, then the stack if
// Start launched it), removes a temporary data directory, and returns
// what failed. It is safe to call more than once.
func (s *System) Close() error {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	errs := append([]error(nil), s.errs...)
	s.errs = nil
	closers := s.close
	s.close = nil
	s.mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		if err := closers[i](); err != nil {
			errs = append(errs, err)
		}
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
