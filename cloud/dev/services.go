package dev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/console"
	"github.com/bowline-iot/bowline/cloud/durable"
	"github.com/bowline-iot/bowline/cloud/eventsource"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/cloud/ingest"
	"github.com/bowline-iot/bowline/cloud/iotdata"
	"github.com/bowline-iot/bowline/cloud/rules"
	"github.com/bowline-iot/bowline/engine/recordchange"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
)

// startServices starts the cloud side in this process, in dependency
// order: fakes, device registration, the telemetry path (with the rules
// stand-in, which also puts bowl events into the events stream), ingest
// behind the events stream's event source, both relays, the worker with the cloud subscribers, the record-change
// consumer (the API and console come after the bowls: startAPI). Each
// long-running part runs under s.run.
func (s *System) startServices(ctx context.Context) error {
	cfg, a := &s.cfg, s.app
	log := cfg.Logger

	fk, err := fakes.Serve(s.runCtx, fakes.NewSet())
	if err != nil {
		return fmt.Errorf("fake providers: %w", err)
	}
	s.fakes = fk
	s.onClose(fk.Close)

	registry, err := a.Devices()
	if err != nil {
		return err
	}
	for _, b := range s.plan {
		if _, err := registry.Register(ctx, b.Thing, b.Tenant); err != nil {
			return fmt.Errorf("register thing %q to tenant %q: %w", b.Thing, b.Tenant, err)
		}
	}

	if err := s.startTelemetryPath(ctx); err != nil {
		return err
	}

	obs := []ingest.Observer{a.IngestMetrics(), s.counters.ingest()}
	if cfg.IngestObserver != nil {
		obs = append(obs, cfg.IngestObserver)
	}
	// Gateway clocks are judged by the record's received_at, which the
	// rules stand-in stamps on the simulated clock (docs/clock.md).
	in, err := a.Ingest(ingest.Config{
		MaxFutureSkew: cfg.futureSkew(), Logger: log.With("part", "ingest"), Observer: ingest.Observers(obs...),
	})
	if err != nil {
		return err
	}
	ies, err := a.EventsSource(ctx, app.IngestHandler(in), func(c *eventsource.Config) {
		c.PollInterval, c.Logger = 200*time.Millisecond, log.With("part", "eventsource", "mapping", eventsource.EventsConsumer.Name)
	})
	if err != nil {
		return err
	}
	s.run("ingest", func() error { return ies.Run(s.runCtx) })
	s.run("ingest gaps", func() error { return in.Run(s.runCtx) })

	events, recordChanges, err := a.Pipes()
	if err != nil {
		return err
	}
	for _, spec := range []relay.PipeSpec{events, recordChanges} {
		r, err := a.Relay(ctx, spec, func(c *relay.Config) {
			c.PollInterval, c.Logger = cfg.RelayPoll, log.With("part", "relay", "pipe", spec.Name)
		})
		if err != nil {
			return fmt.Errorf("relay %s: %w", spec.Name, err)
		}
		s.run("relay "+spec.Name, func() error { return r.Run(s.runCtx) })
	}

	set, err := a.Subscribers(fk.AdapterConfig(), log.With("part", "subscribers"))
	if err != nil {
		return err
	}
	bound, err := app.Bind(set, log, cfg.WrapHandler)
	if err != nil {
		return fmt.Errorf("bind subscribers: %w", err)
	}
	w, err := a.Worker(ctx, bound, func(c *worker.Config) {
		c.Pollers, c.WaitTime, c.RetryDelay = cfg.Pollers, workerWait, workerRetryDelay
		c.Logger, c.Observer = log.With("part", "worker"), worker.Observers(a.WorkerMetrics(), s.counters.worker())
	})
	if err != nil {
		return err
	}
	s.run("worker", func() error { return w.Run(s.runCtx) })
	rc, err := a.RecordChanges(ctx, bound, func(c *recordchange.Config) {
		c.WaitTime, c.Logger = workerWait, log.With("part", "record-changes")
	})
	if err != nil {
		return err
	}
	s.run("record-changes", func() error { return rc.Run(s.runCtx) })
	return nil
}

// startAPI starts the console and the API that serves it, once the bowls'
// agents listen (the console polls their status endpoints).
func (s *System) startAPI(ctx context.Context) error {
	cfg, a := &s.cfg, s.app
	log := cfg.Logger
	agents := make([]console.Agent, 0, len(s.plan))
	for _, b := range s.plan {
		agents = append(agents, console.Agent{Thing: b.Thing, Tenant: b.Tenant, StatusURL: b.StatusURL})
	}
	con, err := a.Console(ctx, app.ConsoleOptions{
		OpsToken: cfg.Settings.OpsToken, Agents: agents, Calls: fakeCalls{s.fakes.Set}, SimClock: s.SimNow,
		NoTelemetry: cfg.ConsoleNoTelemetry, Refresh: cfg.ConsoleRefresh, Logger: log.With("part", "console"),
		// The one-click link Run prints: only here, on a developer's machine.
		OneClickLogin: true, TrustedProxies: cfg.Settings.TrustedProxies,
	})
	if err != nil {
		return err
	}
	s.console = con
	s.run("console", func() error { return con.Run(s.runCtx) })
	// bowline dev serves the console on the API's listener, where its
	// one-click link points, whatever BOWLINE_CONSOLE_ADDR says.
	settings := cfg.Settings
	settings.ConsoleAddr = ""
	srv, err := a.APIWithConsole(settings, con, log.With("part", "api"))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("api address %s (set BOWLINE_API_ADDR): %w", cfg.APIAddr, err)
	}
	s.apiURL = "http://" + ln.Addr().String()
	s.run("api", func() error { return srv.ServeListener(s.runCtx, ln, nil) })
	// Metrics on a loopback listener of their own, never the API's
	// (docs/security.md).
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	s.metrics = "http://" + mln.Addr().String() + "/metrics"
	msrv := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: 5 * time.Second}
	s.run("metrics", func() error {
		context.AfterFunc(s.runCtx, func() { _ = msrv.Close() })
		if err := msrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("metrics: %w", err)
		}
		return nil
	})
	return nil
}

// fakeCalls shows the fake providers' calls in the console.
type fakeCalls struct{ set *fakes.Set }

func (f fakeCalls) ProviderCalls(context.Context) ([]console.ProviderCall, error) {
	var out []console.ProviderCall
	for _, fk := range f.set.All() {
		for _, c := range fk.Calls() {
			out = append(out, console.ProviderCall{Provider: fk.Kind(), Method: c.Method, Path: c.Path, IdempotencyKey: c.IdempotencyKey, Status: c.Status, At: c.At})
		}
	}
	return out, nil
}

// startTelemetryPath starts what carries the gateways' telemetry batches
// (docs/telemetry-path.md): the local IoT data plane endpoint the consumer
// publishes acknowledgements to, the topic rules' stand-in (waited for
// until it has subscribed, so no batch finds the broker without it), and
// the telemetry consumer behind the event source stand-in.
func (s *System) startTelemetryPath(ctx context.Context) error {
	cfg, a := &s.cfg, s.app
	log := cfg.Logger

	broker := s.stack.MQTTBroker()
	if broker == nil {
		return errors.New("telemetry path: the local stack has no embedded MQTT broker to publish acknowledgements on")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("iot data endpoint: %w", err)
	}
	s.iotURL = "http://" + ln.Addr().String()
	isrv := &http.Server{Handler: &iotdata.LocalEndpoint{Broker: broker, Logger: log.With("part", "iot-data")}, ReadHeaderTimeout: 5 * time.Second}
	s.run("iot data endpoint", func() error {
		context.AfterFunc(s.runCtx, func() { _ = isrv.Close() })
		if err := isrv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("iot data endpoint: %w", err)
		}
		return nil
	})

	rr, err := a.Rules(ctx, rules.Config{
		Broker: s.stack.MQTTAddr, ClientID: "bowline-dev-rules-" + cfg.Names.Stack,
		// timestamp() is the receive time: simulated time, as the
		// gateways stamp sent_at on the simulated clock (docs/clock.md).
		Now: s.SimNow, Logger: log.With("part", "rules"),
	})
	if err != nil {
		return err
	}
	s.rules = rr
	rulesDone := s.run("rules", func() error { return rr.Run(s.runCtx) })
	select {
	case <-rr.Ready():
	case <-rulesDone:
		return fmt.Errorf("rule stand-in stopped before subscribing to %s: %w", s.stack.MQTTAddr, s.firstErr())
	case <-ctx.Done():
		return ctx.Err()
	}

	pub, err := a.IoTPublisher(s.iotURL)
	if err != nil {
		return err
	}
	dc := durable.DefaultConfig()
	dc.AckEvery, dc.RollupEvery = cfg.AckEvery, 0
	dc.Observer, dc.Logger = s.counters.consumer(a.TelemetryConsumerMetrics()), log.With("part", "consume")
	consumer, err := a.TelemetryConsumer(dc, pub)
	if err != nil {
		return err
	}
	s.consumer = consumer
	es, err := a.EventSource(ctx, app.TelemetryHandler(consumer), func(c *eventsource.Config) {
		c.PollInterval, c.Logger = 250*time.Millisecond, log.With("part", "eventsource")
	})
	if err != nil {
		return err
	}
	s.run("consume", func() error { return es.Run(s.runCtx) })
	s.run("consume flush", func() error { consumer.FlushEvery(s.runCtx, cfg.AckEvery); return nil })
	return nil
}
