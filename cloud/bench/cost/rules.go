package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/rules"
)

// ruleStandIn runs cloud/rules' Runner, the rules engine stand-in, on the
// run's broker and stack: Basic Ingest publishes become Kinesis records
// (counted by the recorder through Env.AWS) and rule counts.
type ruleStandIn struct {
	app    *app.App
	r      *rules.Runner
	cancel context.CancelFunc
	done   chan error
}

var _ Rules = (*ruleStandIn)(nil)

// Start builds the Runner through cloud/app (the composition root) on
// env.AWS, so its calls are counted, and returns once it subscribed.
func (s *ruleStandIn) Start(ctx context.Context, env Env) error {
	a, err := app.Open(app.Config{AWS: env.AWS, Names: env.Names, Logger: env.Log, Part: app.PartRules})
	if err != nil {
		return fmt.Errorf("rules stand-in: %w", err)
	}
	s.app = a
	// The telemetry rules only: the events pass runs the events rule's
	// stand-in on its own counted clients (measureEvents).
	r, err := a.Rules(ctx, rules.Config{Broker: env.BrokerURL, ClientID: standInPrefix + "rules",
		Rules: []rules.Spec{rules.Telemetry, rules.TelemetryV1}, Now: env.Now, Logger: env.Log})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.r, s.cancel, s.done = r, cancel, make(chan error, 1)
	go func() { s.done <- r.Run(runCtx) }()
	select {
	case <-r.Ready():
		return nil
	case err := <-s.done:
		cancel()
		return errors.Join(errors.New("rules stand-in stopped before it subscribed"), err)
	case <-ctx.Done():
		cancel()
		<-s.done
		return ctx.Err()
	}
}

// Counts sums the Runner's counts over its rules.
func (s *ruleStandIn) Counts() RuleCounts {
	var c RuleCounts
	if s.r == nil {
		return c
	}
	for _, n := range s.r.Counts() {
		c.Evaluations += n.Evaluations
		c.EvaluationUnits += n.EvaluationUnits
		c.Actions += n.Actions
		c.ActionUnits += n.ActionUnits
	}
	return c
}

// Close stops the Runner, which drains what it holds.
func (s *ruleStandIn) Close() error {
	var err error
	if s.cancel != nil {
		s.cancel()
		err = <-s.done
	}
	if s.app != nil {
		err = errors.Join(err, s.app.Close())
	}
	return err
}
