package dev

import (
	"context"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/catalog"
	"github.com/bowline-iot/bowline/cloud/devices"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/subscribers"
	"github.com/bowline-iot/bowline/engine"
	"github.com/bowline-iot/bowline/engine/recordchange"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/awsenv"
)

// IngestGroup is the shared-subscription group of the dev ingest.
const IngestGroup = "bowline-ingest"

// startServices starts the cloud side in this process, in dependency
// order: fakes, device registration, ingest (and waits until it has
// subscribed, so no bowl message finds the broker without a subscriber),
// both relays, the worker with the cloud subscribers, the record-change
// consumer and the API. Each long-running part runs under s.run.
func (s *System) startServices(ctx context.Context) error {
	cfg, names, awsCfg := &s.cfg, s.cfg.Names, s.stack.aws
	log := cfg.Logger
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.registry = reg

	fk, err := fakes.Serve(s.runCtx, fakes.NewSet())
	if err != nil {
		return fmt.Errorf("fake providers: %w", err)
	}
	s.fakes = fk
	s.onClose(fk.Close)

	ddb := dynamodb.NewFromConfig(awsCfg, awsenv.DynamoDBOptions)
	registry, err := devices.New(ddb, names.AppTable(), nil)
	if err != nil {
		return err
	}
	for _, b := range s.plan {
		if _, err := registry.Register(ctx, b.Thing, b.Tenant); err != nil {
			return fmt.Errorf("register thing %q to tenant %q: %w", b.Thing, b.Tenant, err)
		}
	}

	obs := []ingest.Observer{ingest.NewMetrics(reg), s.counters.ingest()}
	if cfg.IngestObserver != nil {
		obs = append(obs, cfg.IngestObserver)
	}
	in, err := ingest.New(ingest.Config{
		Broker: s.stack.MQTTAddr, ClientID: "bowline-dev-ingest-" + names.Stack, Group: IngestGroup,
		Names: names, AWS: awsCfg, MaxFutureSkew: cfg.futureSkew(),
		Logger: log.With("part", "ingest"), Observer: ingest.Observers(obs...),
	})
	if err != nil {
		return err
	}
	ingestDone := s.run("ingest", func() error { return in.Run(s.runCtx) })
	select {
	case <-in.Ready():
	case <-ingestDone:
		return fmt.Errorf("ingest stopped before subscribing to %s: %w", s.stack.MQTTAddr, s.firstErr())
	case <-ctx.Done():
		return ctx.Err()
	}

	rm := relay.NewMetrics(reg)
	for _, spec := range []relay.PipeSpec{relay.EventsPipe, relay.RecordChangesPipe} {
		r, err := relay.ForStack(ctx, awsCfg, names, spec, func(c *relay.Config) {
			c.PollInterval, c.Logger, c.Observer = cfg.RelayPoll, log.With("part", "relay", "pipe", spec.Name), rm.For(spec.Name)
		})
		if err != nil {
			return fmt.Errorf("relay %s: %w", spec.Name, err)
		}
		s.run("relay "+spec.Name, func() error { return r.Run(s.runCtx) })
	}

	sb, err := subscribers.Build(subscribers.BuildConfig{AWS: awsCfg, Names: names, Adapters: fk.AdapterConfig(), Logger: log.With("part", "subscribers")})
	if err != nil {
		return err
	}
	s.onClose(sb.Engine.Close)
	bound, err := catalog.Bind(catalog.Bowline(), s.handlers(sb.Set))
	if err != nil {
		return fmt.Errorf("bind subscribers: %w", err)
	}
	w, err := worker.ForStack(ctx, awsCfg, names, bound.Subscriptions, func(c *worker.Config) {
		c.Declared = bound.Declared
		c.Pollers, c.WaitTime, c.RetryDelay = cfg.Pollers, workerWait, workerRetryDelay
		c.Logger, c.Observer = log.With("part", "worker"), workerObservers{worker.NewMetrics(reg), s.counters.worker()}
	})
	if err != nil {
		return err
	}
	s.run("worker", func() error { return w.Run(s.runCtx) })
	rc, err := recordchange.ForStack(ctx, awsCfg, names, bound.Subscriptions, func(c *recordchange.Config) {
		c.WaitTime, c.Logger, c.Metrics = workerWait, log.With("part", "record-changes"), recordchange.NewMetrics(reg)
	})
	if err != nil {
		return err
	}
	s.run("record-changes", func() error { return rc.Run(s.runCtx) })

	b, err := api.Build(api.BuildConfig{AWS: awsCfg, Names: names, Settings: cfg.Settings, Registry: reg, Logger: log.With("part", "api")})
	if err != nil {
		return err
	}
	s.onClose(b.Engine.Close)
	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("api address %s (set BOWLINE_API_ADDR): %w", cfg.APIAddr, err)
	}
	s.apiURL = "http://" + ln.Addr().String()
	s.run("api", func() error { return b.API.ServeListener(s.runCtx, ln, nil) })
	return nil
}

// handlers gives every DURABLE and BEST_EFFORT subscription of the catalog
// a handler: the cloud subscriber when there is one, else one that logs
// (as `bowline worker` does), each wrapped by Config.WrapHandler.
func (s *System) handlers(set *subscribers.Set) map[string]engine.Handler {
	hs := map[string]engine.Handler{}
	for _, sub := range catalog.Bowline().Subscriptions {
		if sub.Lane == engine.Durable || sub.Lane == engine.BestEffort {
			name := sub.Name
			hs[name] = func(ctx context.Context, env engine.Envelope) error {
				s.cfg.Logger.Debug("event", "subscription", name, "event_id", env.ID, "type", env.Type, "tenant", env.Tenant)
				return nil
			}
		}
	}
	for name, h := range set.Handlers() {
		hs[name] = h
	}
	if s.cfg.WrapHandler != nil {
		for name, h := range hs {
			hs[name] = s.cfg.WrapHandler(name, h)
		}
	}
	return hs
}
