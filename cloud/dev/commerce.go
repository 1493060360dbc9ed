package dev

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/oklog/ulid/v2"

	"github.com/bowline-iot/bowline/cloud/api"
	"github.com/bowline-iot/bowline/cloud/app"
	"github.com/bowline-iot/bowline/cloud/fakes"
	"github.com/bowline-iot/bowline/engine/relay"
	"github.com/bowline-iot/bowline/engine/worker"
	"github.com/bowline-iot/bowline/internal/resources"
)

// CommerceConfig configures StartCommerce.
type CommerceConfig struct {
	// AWS and Names select the provisioned stack. Required.
	AWS   aws.Config
	Names resources.Names
	// Settings are the API's tokens and webhook secret. Required.
	Settings api.Settings
	// RelayPoll is the relay's pause after an empty read; default 50ms.
	RelayPoll time.Duration
	// Pollers is the worker's receive loops; default 2.
	Pollers int
	// Logger defaults to a discarding one.
	Logger *slog.Logger
}

// Commerce is the commerce path running in this process on a provisioned
// stack: the fake providers, the HTTP API, the events relay and the worker
// with the cloud subscribers, all from one cloud/app App (one engine). The
// commerce end-to-end test and the e2e benchmark use it; System wires the
// same parts plus the bowl path.
type Commerce struct {
	// APIURL is "http://127.0.0.1:port".
	APIURL string
	// Fakes are the providers the subscribers call.
	Fakes *fakes.Servers

	group *app.Group
}

// StartCommerce starts everything and returns once the API listens.
func StartCommerce(ctx context.Context, cfg CommerceConfig) (*Commerce, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RelayPoll == 0 {
		cfg.RelayPoll = 50 * time.Millisecond
	}
	if cfg.Pollers == 0 {
		cfg.Pollers = 2
	}
	p := &Commerce{group: app.NewGroup(context.WithoutCancel(ctx), cfg.Logger)}
	runCtx := p.group.Context()
	ok := false
	defer func() {
		if !ok {
			_ = p.Close()
		}
	}()
	a, err := app.Open(app.Config{AWS: cfg.AWS, Names: cfg.Names, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	p.group.OnClose(a.Close)

	fk, err := fakes.Serve(runCtx, fakes.NewSet())
	if err != nil {
		return nil, err
	}
	p.Fakes = fk
	p.group.OnClose(fk.Close)

	srv, err := a.API(cfg.Settings, nil)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("commerce api listen: %w", err)
	}
	p.APIURL = "http://" + ln.Addr().String()
	p.group.Go("api", func(ctx context.Context) error { return srv.ServeListener(ctx, ln, nil) })

	// A fresh pipe name gives this relay its own checkpoints, so several
	// commerce paths on one stack (tests) each read the stream from the start.
	pipe, _, err := a.Pipes()
	if err != nil {
		return nil, err
	}
	r, err := a.Relay(ctx, pipe, func(c *relay.Config) {
		c.Pipe.Name = "events-" + ulid.Make().String()
		c.PollInterval = cfg.RelayPoll
	})
	if err != nil {
		return nil, err
	}
	p.group.Go("relay", r.Run)

	set, err := a.Subscribers(fk.AdapterConfig(), nil)
	if err != nil {
		return nil, err
	}
	bound, err := app.Bind(set, cfg.Logger, nil)
	if err != nil {
		return nil, err
	}
	w, err := a.Worker(ctx, bound, func(c *worker.Config) {
		c.Pollers, c.WaitTime, c.Lease, c.RetryDelay = cfg.Pollers, 2*time.Second, 20*time.Second, time.Second
	})
	if err != nil {
		return nil, err
	}
	p.group.Go("worker", w.Run)
	ok = true
	return p, nil
}

// Close stops everything and returns what failed.
func (p *Commerce) Close() error { return p.group.Close() }
