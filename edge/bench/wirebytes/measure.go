package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/edge/agent"
	"github.com/bowline-iot/bowline/edge/wire"
	"github.com/bowline-iot/bowline/edge/wire/batch"
	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
)

// params sizes a run.
type params struct {
	// Gateways; gateway i has 1 + i%2 bowls, so an even number averages
	// 1.5 bowls per gateway.
	Gateways int `json:"gateways"`
	// Duration is the simulated time from sim.DefaultStart (05:00).
	Duration time.Duration `json:"-"`
	Hours    float64       `json:"hours"`
	Seed     uint64        `json:"seed"`
	RateHz   int           `json:"rate_hz"`
	// ResolutionMg is the firmware's resolution (sim.Config); 0: the
	// simulator's default.
	ResolutionMg int `json:"resolution_mg"`
	// V1 also encodes the v1 JSON baseline.
	V1 bool `json:"v1"`
	// Start is the simulated wall time of boot; zero: sim.DefaultStart.
	Start time.Time `json:"start"`
}

// encoding is the tally of one encoding's messages.
type encoding struct {
	Messages       int     `json:"messages"`
	Bytes          int64   `json:"bytes"`
	BytesPerSample float64 `json:"bytes_per_sample"`
	// MessagesPerGatewayMinute is the mean; MaxPerGatewayMinute the most.
	MessagesPerGatewayMinute float64 `json:"messages_per_gateway_minute"`
	MaxPerGatewayMinute      int     `json:"max_messages_per_gateway_minute"`
	P50Bytes                 int     `json:"message_p50_bytes"`
	P99Bytes                 int     `json:"message_p99_bytes"`
	MaxBytes                 int     `json:"message_max_bytes"`

	sizes []int
}

func (e *encoding) add(sizes []int) {
	e.Messages += len(sizes)
	e.MaxPerGatewayMinute = max(e.MaxPerGatewayMinute, len(sizes))
	for _, n := range sizes {
		e.Bytes += int64(n)
	}
	e.sizes = append(e.sizes, sizes...)
}

func (e *encoding) finish(samples int64, gatewayMinutes int) {
	if samples > 0 {
		e.BytesPerSample = float64(e.Bytes) / float64(samples)
	}
	if gatewayMinutes > 0 {
		e.MessagesPerGatewayMinute = float64(e.Messages) / float64(gatewayMinutes)
	}
	slices.Sort(e.sizes)
	if n := len(e.sizes); n > 0 {
		e.P50Bytes, e.P99Bytes, e.MaxBytes = e.sizes[n/2], e.sizes[min(n-1, n*99/100)], e.sizes[n-1]
	}
}

// result is the --json output.
type result struct {
	Params         params         `json:"params"`
	Bowls          int            `json:"bowls"`
	Samples        int64          `json:"samples"`
	SamplesByKind  map[string]int `json:"samples_by_kind"`
	GatewayMinutes int            `json:"gateway_minutes"`
	Batch          encoding       `json:"batch"`
	V1             *encoding      `json:"v1_json,omitempty"`
	// V1Ratio is v1 bytes over batch bytes.
	V1Ratio float64 `json:"v1_ratio,omitempty"`
}

// bowl is one simulated bowl on its own link through a real bridge, and
// the telemetry samples its readings became, waiting for their minute.
type bowl struct {
	sim   *sim.Bowl
	thing string
	seq   uint64 // the last telemetry seq, as the outbox numbers them

	mu      sync.Mutex
	pending []batch.Sample
	err     error
}

// gateway is the bowls of one gateway.
type gateway struct {
	name  string
	bowls []*bowl
}

// measure runs the simulated bowls for p.Duration, cuts one batch per
// gateway per minute and tallies its payloads.
func measure(ctx context.Context, p params) (result, error) {
	res := result{Params: p, SamplesByKind: map[string]int{}}
	var gws []*gateway
	bowls := 0
	for i := range p.Gateways {
		gws = append(gws, &gateway{name: fmt.Sprintf("gw-%03d", i)})
		bowls += 1 + i%2
	}
	res.Bowls = bowls
	start := p.Start
	if start.IsZero() {
		start = sim.DefaultStart
	}
	fleet, err := sim.NewFleet(sim.Config{Bowls: bowls, Seed: p.Seed, Start: start, SampleRateHz: p.RateHz, ResolutionMg: p.ResolutionMg,
		PetsPerBowl: 2, RingSize: 1024, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	next := 0
	for i, gw := range gws {
		for range 1 + i%2 {
			sb := fleet.Bowls()[next]
			next++
			b := &bowl{sim: sb, thing: gw.name + string(wire.ThingSeparator) + sb.ID()}
			gw.bowls = append(gw.bowls, b)
			br, err := bridge.New(bridge.Config{Sink: bridge.SinkFunc(func(_ context.Context, rs []bridge.Record) error {
				b.deliver(start, rs)
				return nil
			}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBatch: 256})
			if err != nil {
				return res, err
			}
			gwEnd, devEnd := net.Pipe()
			wg.Go(func() { _ = br.Run(ctx, gwEnd) })
			wg.Go(func() { _ = sb.MCU().Run(ctx, devEnd) })
		}
	}

	minutes := int(p.Duration / time.Minute)
	batch1 := encoding{}
	var v1 *encoding
	if p.V1 {
		v1 = &encoding{}
	}
	for m := range minutes {
		end := time.Duration(m+1) * time.Minute
		for _, gw := range gws {
			for _, b := range gw.bowls {
				if err := b.sim.Simulate(ctx, end); err != nil {
					return res, fmt.Errorf("simulate %s: %w", b.thing, err)
				}
			}
		}
		for _, gw := range gws {
			for _, b := range gw.bowls {
				if err := drained(ctx, b.sim.MCU()); err != nil {
					return res, err
				}
			}
		}
		sentAt := start.Add(end)
		for _, gw := range gws {
			bt := batch.Batch{Outbox: "ob-" + gw.name, SentAt: sentAt}
			for _, b := range gw.bowls {
				s, err := b.take(sentAt)
				if err != nil {
					return res, err
				}
				if len(s) == 0 {
					continue
				}
				bt.Things = append(bt.Things, batch.Series{Thing: b.thing, Samples: s})
				res.Samples += int64(len(s))
				for _, x := range s {
					res.SamplesByKind[x.Kind]++
				}
			}
			if len(bt.Things) == 0 {
				continue
			}
			ps, err := batch.Split(bt, wire.MaxPayload)
			if err != nil {
				return res, fmt.Errorf("minute %d of %s: %w", m, gw.name, err)
			}
			batch1.add(lens(ps))
			if v1 != nil {
				sizes, err := v1Sizes(bt)
				if err != nil {
					return res, err
				}
				v1.add(sizes)
			}
		}
	}
	res.GatewayMinutes = minutes * len(gws)
	batch1.finish(res.Samples, res.GatewayMinutes)
	res.Batch = batch1
	if v1 != nil {
		v1.finish(res.Samples, res.GatewayMinutes)
		res.V1 = v1
		if batch1.Bytes > 0 {
			res.V1Ratio = float64(v1.Bytes) / float64(batch1.Bytes)
		}
	}
	return res, nil
}

// deliver converts records to telemetry samples as edge/agent's sink does
// (weight_g = mg/1000, temperature_c = centi-degrees/100, ...), each with
// the next seq, timed by the device clock (the simulation runs faster
// than real time, so the bridge's wall-clock mapping would squeeze it).
func (b *bowl) deliver(start time.Time, rs []bridge.Record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tel := func(at time.Time, kind string, v float64) {
		if b.err != nil {
			return
		}
		value, scale, err := batch.Scaled(v)
		if err != nil {
			b.err = fmt.Errorf("%s %s: %w", b.thing, kind, err)
			return
		}
		b.seq++
		b.pending = append(b.pending, batch.Sample{Seq: b.seq, At: at, Kind: kind, Value: value, Scale: scale})
	}
	for _, r := range rs {
		at := start.Add(r.Uptime)
		switch f := r.Body.(type) {
		case frame.WeightBatch:
			rate := max(1, int(f.RateHz))
			for i, mg := range f.Milligrams {
				tel(at.Add(time.Duration(i)*time.Second/time.Duration(rate)), agent.KindWeight, float64(mg)/1000)
			}
		case frame.TagSeen:
			tel(at, agent.KindTagRSSI, float64(f.RSSI))
		case frame.Temperature:
			tel(at, agent.KindTemperature, float64(f.CentiCelsius)/100)
		case frame.Battery:
			tel(at, agent.KindBattery, float64(f.Percent))
			tel(at, agent.KindBatteryMV, float64(f.Millivolts))
		case frame.Lid:
			tel(at, agent.KindLid, float64(f.State))
		}
	}
}

// take removes and returns the pending samples read before end, in seq
// order.
func (b *bowl) take(end time.Time) ([]batch.Sample, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return nil, b.err
	}
	n := 0
	for n < len(b.pending) && b.pending[n].At.Before(end) {
		n++
	}
	out := slices.Clone(b.pending[:n])
	b.pending = slices.Delete(b.pending, 0, n)
	return out, nil
}

// drained waits until the MCU's ring is empty: every reading it numbered
// was delivered to the sink and acknowledged.
func drained(ctx context.Context, m *sim.MCU) error {
	deadline := time.Now().Add(time.Minute)
	for m.Stats().RingLen > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("mcu ring never drained: %+v", m.Stats())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Microsecond):
		}
	}
	return nil
}

func lens(ps [][]byte) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = len(p)
	}
	return out
}

// v1MaxSamples is the forwarder's default samples per v1 telemetry
// message (edge/forward Config.MaxBatchSamples).
const v1MaxSamples = 1000

// v1Sizes returns the sizes of the v1 JSON telemetry messages the same
// samples make: per thing, messages of at most v1MaxSamples samples,
// encoded as edge/forward's encodeTelemetry does.
func v1Sizes(b batch.Batch) ([]int, error) {
	var sizes []int
	for _, s := range b.Things {
		for i := 0; i < len(s.Samples); i += v1MaxSamples {
			chunk := s.Samples[i:min(len(s.Samples), i+v1MaxSamples)]
			m := wire.TelemetryMessage{V: wire.Version, Thing: s.Thing, Seq: chunk[0].Seq, Samples: make([]wire.Sample, len(chunk)), SentAt: b.SentAt.UTC()}
			for j, x := range chunk {
				m.Samples[j] = wire.Sample{T: x.At.UTC(), Kind: x.Kind, Value: x.Float()}
			}
			p, err := json.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("v1 %s: %w", s.Thing, err)
			}
			sizes = append(sizes, len(p))
		}
	}
	return sizes, nil
}
