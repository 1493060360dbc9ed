package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bowline-iot/bowline/edge/detect"
	"github.com/bowline-iot/bowline/edge/forward"
	"github.com/bowline-iot/bowline/edge/outbox"
	"github.com/bowline-iot/bowline/edge/status"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
)

// Config configures the agent. Each part has its own documented defaults.
type Config struct {
	Outbox  outbox.Config
	Forward forward.Config
	Detect  detect.Config
	// StatusAddr is the loopback status endpoint; "" means
	// status.DefaultAddr, "off" disables it.
	StatusAddr string
	// Inputs are the bowl links. At least one.
	Inputs []Input
	// Things maps a device id to its thing name; an unmapped device is
	// "<gateway>:<device id>" if its id passes wire.CheckGatewayName (no
	// ':') and that name is no thing of the map; other devices are refused
	// (ErrDeviceRefused). No two devices may map to one thing. With wire
	// v2 (Forward.Wire) every mapped thing must be "<gateway>:<bowl>": the
	// cloud refuses a batch holding any other.
	Things map[string]string
	// LinkRetry is the pause before reopening a failed link. Default 1s.
	LinkRetry time.Duration
	// ExpireEvery is how often lane TTLs are applied. Default 1m.
	ExpireEvery time.Duration
	// CompactEvery is how often compaction is considered. Default 1h.
	CompactEvery time.Duration
	// Clock is the gateway's wall clock, to which the bridge maps each
	// bowl's uptime (so it stamps every reading and detected event).
	// Default time.Now. A simulation running faster than real time passes
	// its simulated clock, so readings keep their device-clock spacing.
	Clock func() time.Time
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports the first bad field of the agent's own settings; the
// parts validate theirs in New.
func (c Config) Validate() error {
	if len(c.Inputs) == 0 {
		return fmt.Errorf("agent config: inputs: at least one bowl input is required")
	}
	gateway := c.gateway()
	owner := make(map[string]string, len(c.Things))
	for _, dev := range sortedKeys(c.Things) {
		thing := c.Things[dev]
		if err := wire.CheckName(fmt.Sprintf("things[%q]", dev), thing); err != nil {
			return fmt.Errorf("agent config: %w", err)
		}
		if other, ok := owner[thing]; ok {
			return fmt.Errorf("agent config: things[%q] %q: also the thing of device %q; each device needs a thing of its own", dev, thing, other)
		}
		if thing == gateway && gateway != "" {
			return fmt.Errorf("agent config: things[%q] %q: is the gateway's own thing name", dev, thing)
		}
		owner[thing] = dev
	}
	// The cloud refuses a whole batch with a thing outside the gateway's
	// namespace (docs/telemetry-path.md, "Identity"): it would be resent
	// forever, and every bowl's telemetry with it.
	if c.Forward.Wire != forward.WireV1 && gateway != "" {
		for _, dev := range sortedKeys(c.Things) {
			if thing := c.Things[dev]; !strings.HasPrefix(thing, gateway+string(wire.ThingSeparator)) {
				return fmt.Errorf("agent config: things[%q] %q: a wire v2 batch carries only the gateway's own things, named %s%c<bowl>; rename it or set telemetry.wire v1", dev, thing, gateway, wire.ThingSeparator)
			}
		}
	}
	if c.LinkRetry < 0 || c.ExpireEvery < 0 || c.CompactEvery < 0 {
		return fmt.Errorf("agent config: link_retry, expire_every, compact_every: must not be negative")
	}
	return nil
}

// gateway is the gateway's own thing name (forward.Config's default).
func (c Config) gateway() string {
	if c.Forward.Thing != "" {
		return c.Forward.Thing
	}
	return c.Forward.ClientID
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// thingFunc names a device's thing: its entry in things, else
// "<gateway>:<device id>", the gateway's own namespace, which is all the
// AWS IoT gateway policy lets it publish as (docs/security.md). The id must
// pass wire.CheckGatewayName (no ':') and the whole name the name rule,
// and it must not be a thing name of the map.
func thingFunc(things map[string]string, gateway string) ThingFunc {
	owner := make(map[string]string, len(things))
	for dev, thing := range things {
		owner[thing] = dev
	}
	return func(dev string) (string, error) {
		if t, ok := things[dev]; ok {
			return t, nil
		}
		if err := wire.CheckGatewayName("unmapped device id", dev); err != nil {
			return "", err
		}
		name := gateway + string(wire.ThingSeparator) + dev
		if err := wire.CheckName("thing name of unmapped device "+dev, name); err != nil {
			return "", fmt.Errorf("%w; map this device in things", err)
		}
		if other, ok := owner[name]; ok {
			return "", fmt.Errorf("unmapped device id %q would be thing %q, which the things map gives device %q; map this device to a thing of its own", dev, name, other)
		}
		return name, nil
	}
}

// Agent is the running gateway.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	out     *outbox.Outbox
	sink    *Sink
	fwd     *forward.Forwarder
	bridge  *bridge.Bridge
	status  *status.Server
	reg     *prometheus.Registry
	started time.Time
	links   []*linkState
}

// New validates cfg, opens the outbox (ErrCorrupt and ErrLocked surface
// here), binds the status endpoint and builds the parts. Close releases
// them if Run is not called.
func New(cfg Config) (*Agent, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LinkRetry == 0 {
		cfg.LinkRetry = time.Second
	}
	if cfg.ExpireEvery == 0 {
		cfg.ExpireEvery = time.Minute
	}
	if cfg.CompactEvery == 0 {
		cfg.CompactEvery = time.Hour
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Outbox.Logger = cfg.Logger.With("part", "outbox")
	cfg.Forward.Logger = cfg.Logger.With("part", "forward")
	if cfg.Forward.Now == nil {
		cfg.Forward.Now = cfg.Clock // sent_at on the records' clock
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, reg: prometheus.NewRegistry(), started: time.Now()}
	// Validate the forwarder before touching the disk.
	if err := cfg.Forward.Validate(); err != nil {
		return nil, err
	}
	// The metrics observe the outbox and the forwarder; their gauges read
	// the outbox at scrape time, after it is open.
	m := status.NewMetrics(a.reg, func() (outbox.Stats, error) { return a.out.Stats() })
	cfg.Outbox.Observer, cfg.Forward.Observer = m, m
	var err error
	if a.out, err = outbox.Open(cfg.Outbox); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			a.out.Close()
		}
	}()
	if a.sink, err = NewSink(a.out, thingFunc(cfg.Things, cfg.gateway()), cfg.Detect); err != nil {
		return nil, err
	}
	a.sink.SetLogger(cfg.Logger.With("part", "sink"))
	if a.fwd, err = forward.New(cfg.Forward, a.out); err != nil {
		return nil, err
	}
	if a.bridge, err = bridge.New(bridge.Config{Sink: a.sink, Now: cfg.Clock, Logger: cfg.Logger.With("part", "bridge")}); err != nil {
		return nil, err
	}
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bowline_edge_sink_refused_total",
		Help: "Deliveries of bowl records refused, not stored and not acknowledged, because the device has no thing name it may publish under (each bridge retry counts)."},
		func() float64 { return float64(a.sink.Refused()) }))
	if cfg.StatusAddr != "off" {
		if a.status, err = status.Listen(status.Config{Addr: cfg.StatusAddr, Report: a.Report, Gatherer: a.reg, Logger: cfg.Logger}); err != nil {
			return nil, err
		}
	}
	for range cfg.Inputs {
		a.links = append(a.links, &linkState{})
	}
	ok = true
	return a, nil
}

// StatusAddr is the bound status address ("" when disabled).
func (a *Agent) StatusAddr() string {
	if a.status == nil {
		return ""
	}
	return a.status.Addr()
}

// Outbox exposes the outbox (tests, tools).
func (a *Agent) Outbox() *outbox.Outbox { return a.out }

// Run serves the inputs, forwards and serves status until ctx ends; then
// it closes the outbox. It returns nil on a clean stop.
func (a *Agent) Run(ctx context.Context) error {
	defer a.out.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := a.fwd.Run(ctx); err != nil && ctx.Err() == nil {
			cancel(fmt.Errorf("forwarder: %w", err))
		}
	})
	if a.status != nil {
		wg.Go(func() {
			if err := a.status.Serve(ctx); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	for i, in := range a.cfg.Inputs {
		wg.Go(func() { serve(ctx, in, a.bridge, a.links[i], a.cfg.LinkRetry, a.log.Warn) })
	}
	wg.Go(func() { a.housekeeping(ctx) })
	a.log.Info("agent running", "inputs", len(a.cfg.Inputs), "broker", status.RedactURL(a.cfg.Forward.Broker), "outbox", a.out.Path(), "status", a.StatusAddr())
	<-ctx.Done()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (a *Agent) housekeeping(ctx context.Context) {
	expire := time.NewTicker(a.cfg.ExpireEvery)
	defer expire.Stop()
	compact := time.NewTicker(a.cfg.CompactEvery)
	defer compact.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-expire.C:
			if err := a.out.Expire(ctx); err != nil && ctx.Err() == nil {
				a.log.Error("apply ttl", "err", err)
			}
		case <-compact.C:
			if _, err := a.out.Compact(); err != nil {
				a.log.Error("compact outbox", "err", err)
			}
		}
	}
}

// Report builds the /status document.
func (a *Agent) Report(context.Context) (wire.GatewayStatus, error) {
	s, err := a.out.Stats()
	if err != nil {
		return wire.GatewayStatus{}, err
	}
	now := time.Now()
	r := wire.GatewayStatus{
		Tenant: a.cfg.Forward.Tenant, Gateway: a.cfg.Forward.ClientID, Uptime: now.Sub(a.started),
		Lanes: wire.LanesStatus{Events: status.LaneFrom(s.Events, now), Telemetry: status.LaneFrom(s.Telemetry, now)},
		Disk:  status.DiskFrom(a.out.Path(), s),
		MQTT:  a.fwd.Status(),
	}
	r.Acks = status.AcksFrom(s.Telemetry, r.MQTT.Telemetry, now)
	if fi, err := os.Stat(a.out.Path()); err == nil {
		r.Disk.FileBytes = fi.Size()
	}
	for i, in := range a.cfg.Inputs {
		l := a.links[i]
		l.mu.Lock()
		r.Bowls = append(r.Bowls, wire.BowlStatus{Input: in.String(), Connected: l.connected, LastError: l.lastErr})
		l.mu.Unlock()
	}
	seen := a.sink.LastSeen()
	devs := make([]string, 0, len(seen))
	for d := range seen {
		devs = append(devs, d)
	}
	sort.Strings(devs)
	for _, d := range devs {
		r.Bowls = append(r.Bowls, wire.BowlStatus{Device: d, Connected: true, LastSeen: seen[d]})
	}
	return r, nil
}
