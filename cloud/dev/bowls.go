package dev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/edge/agent"
	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
)

// foreverSim is the simulated span of a run without Config.Duration: far
// beyond any dev session at any speed the machine can keep up with.
const foreverSim = 100 * 365 * 24 * time.Hour

// Bowl is one simulated bowl and its gateway agent.
type Bowl struct {
	// Device is the bowl's device id (bowl-000, ...); Gateway the name of
	// the gateway it hangs off (gw-000, ...: one bowl per gateway here);
	// Thing its thing name, <gateway>:<device> as a wire v2 batch requires
	// (docs/telemetry-path.md, "Identity"), registered to Tenant.
	Device  string `json:"device"`
	Gateway string `json:"gateway"`
	Thing   string `json:"thing"`
	Tenant  string `json:"tenant"`
	// Socket is the unix socket the bowl's MCU serves and its agent dials.
	Socket string `json:"socket"`
	// Outbox is the agent's bbolt file; StatusURL its status endpoint
	// (/status, /metrics).
	Outbox    string `json:"outbox"`
	StatusURL string `json:"status_url"`

	bowl  *sim.Bowl
	agent *agent.Agent
}

// Agent returns the bowl's edge agent.
func (b *Bowl) Agent() *agent.Agent { return b.agent }

// MCU returns the bowl's simulated microcontroller.
func (b *Bowl) MCU() *sim.MCU { return b.bowl.MCU() }

// planBowls names the bowls and assigns them to tenants, round robin.
func planBowls(cfg *Config, dir string) []*Bowl {
	out := make([]*Bowl, cfg.Bowls)
	for i := range out {
		dev, gw := fmt.Sprintf("bowl-%03d", i), fmt.Sprintf("gw-%03d", i)
		out[i] = &Bowl{
			Device: dev, Gateway: gw, Thing: gw + string(wire.ThingSeparator) + dev, Tenant: cfg.Tenants[i%len(cfg.Tenants)],
			Socket: filepath.Join(dir, dev+".sock"),
			Outbox: filepath.Join(dir, dev, "outbox.db"),
		}
	}
	return out
}

// simClock is the bowls' clock: Config.Start until the simulation begins,
// then Start plus Speed times the real time since. Safe for concurrent use.
type simClock struct {
	start time.Time
	speed float64
	began atomic.Int64 // unix nanos of the real start; 0 before
}

// Now is the simulated wall time.
func (c *simClock) Now() time.Time {
	b := c.began.Load()
	if b == 0 {
		return c.start
	}
	return c.start.Add(time.Duration(float64(time.Now().UnixNano()-b) * c.speed))
}

// startBowls builds the fleet, serves each bowl's MCU on its unix socket,
// starts one agent per bowl and then the simulation.
func (s *System) startBowls(ctx context.Context) error {
	cfg := &s.cfg
	if len(s.plan) == 0 {
		return nil
	}
	fleet, err := sim.NewFleet(sim.Config{
		Bowls: len(s.plan), Seed: cfg.Seed, Start: cfg.Start, Speed: cfg.Speed, SampleRateHz: cfg.RateHz,
		PetsPerBowl: cfg.PetsPerBowl, RingSize: cfg.RingSize, OnTruth: cfg.OnTruth, FirstMealAfter: cfg.FirstMealAfter,
		Logger: cfg.Logger.With("part", "sim"),
	})
	if err != nil {
		return fmt.Errorf("simulated bowls: %w", err)
	}
	for i, b := range fleet.Bowls() {
		pb := s.plan[i]
		pb.bowl = b
		if err := s.serveBowl(pb); err != nil {
			return err
		}
		if err := s.startAgent(pb); err != nil {
			return err
		}
	}
	s.clock.began.Store(time.Now().UnixNano())
	s.run("simulation", func() error {
		d := cfg.Duration
		if d == 0 {
			d = foreverSim
		}
		err := fleet.Simulate(s.runCtx, d)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err == nil {
			close(s.simDone)
		}
		return err
	})
	return nil
}

// serveBowl listens on the bowl's socket and runs its MCU on each
// connection its agent makes (one at a time, as a UART would).
func (s *System) serveBowl(b *Bowl) error {
	_ = os.Remove(b.Socket) // a socket file left by an earlier run
	ln, err := transport.ListenUnix(b.Socket)
	if err != nil {
		return fmt.Errorf("bowl %s socket: %w", b.Device, err)
	}
	context.AfterFunc(s.runCtx, func() { ln.Close() })
	log := s.cfg.Logger.With("part", "bowl", "device", b.Device)
	s.run("bowl "+b.Device, func() error {
		for {
			c, err := ln.Accept()
			if err != nil {
				if s.runCtx.Err() != nil || errors.Is(err, net.ErrClosed) {
					return nil
				}
				return fmt.Errorf("accept on %s: %w", b.Socket, err)
			}
			if err := b.bowl.MCU().Run(s.runCtx, c); err != nil && s.runCtx.Err() == nil {
				log.Info("agent disconnected", "err", err)
			}
			c.Close()
		}
	})
	return nil
}

// startAgent runs the bowl's gateway agent: its own outbox, the bowl's
// socket as its input, the broker as its cloud, the simulated clock.
func (s *System) startAgent(b *Bowl) error {
	if err := os.MkdirAll(filepath.Dir(b.Outbox), 0o755); err != nil {
		return fmt.Errorf("outbox directory of %s: %w", b.Device, err)
	}
	a, err := agent.New(agent.Config{
		Outbox: outbox.Config{Path: b.Outbox},
		Forward: forward.Config{
			Broker: s.stack.MQTTAddr, Tenant: b.Tenant, ClientID: b.Gateway,
			BackoffMin: 100 * time.Millisecond, BackoffMax: 2 * time.Second,
			// Wire v2 through the rule stand-in, on real-time intervals:
			// a batch every BatchInterval, resent when no ack came within
			// AckTimeout (the consumer acks every Config.AckEvery).
			Wire: forward.WireV2, Rule: wire.RuleName(s.cfg.Names.Stack, wire.TelemetryRule),
			BatchInterval: s.cfg.BatchInterval, AckTimeout: s.cfg.AckTimeout,
			// Events by Basic Ingest to the events rule's stand-in, into
			// the events stream that ingest consumes.
			EventsRule: wire.RuleName(s.cfg.Names.Stack, wire.EventsRule),
		},
		StatusAddr: "127.0.0.1:0",
		Inputs:     []agent.Input{{Kind: agent.InputUnix, Path: b.Socket}},
		Things:     map[string]string{b.Device: b.Thing},
		LinkRetry:  100 * time.Millisecond,
		Clock:      s.clock.Now,
		Logger:     s.cfg.Logger.With("part", "agent", "thing", b.Thing),
	})
	if err != nil {
		return fmt.Errorf("agent of %s: %w", b.Device, err)
	}
	b.agent = a
	b.StatusURL = "http://" + a.StatusAddr()
	s.run("agent "+b.Thing, func() error { return a.Run(s.runCtx) })
	return nil
}
