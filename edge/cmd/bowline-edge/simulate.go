package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
	"github.com/bowline-iot/bowline/internal/cli"
)

// faultFlags collects repeated --fault AFTER:CODE[:DETAIL] values.
type faultFlags []sim.ScheduledFault

var faultCodes = map[string]frame.FaultCode{
	"load_cell": frame.FaultLoadCell, "tag_reader": frame.FaultTagReader,
	"brownout": frame.FaultBrownout, "sensor_drift": frame.FaultSensorDrift,
}

func (f *faultFlags) String() string { return fmt.Sprint(len(*f), " faults") }

func (f *faultFlags) Set(v string) error {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) < 2 {
		return fmt.Errorf("fault %q: want AFTER:CODE[:DETAIL], e.g. 2h:load_cell", v)
	}
	after, err := time.ParseDuration(parts[0])
	if err != nil {
		return fmt.Errorf("fault %q: after: %w", v, err)
	}
	code, ok := faultCodes[parts[1]]
	if !ok {
		return fmt.Errorf("fault %q: code %q not one of load_cell, tag_reader, brownout, sensor_drift", v, parts[1])
	}
	detail := parts[1]
	if len(parts) == 3 {
		detail = parts[2]
	}
	*f = append(*f, sim.ScheduledFault{Bowl: -1, After: after, Code: code, Detail: detail})
	return nil
}

// simLink is where one simulated bowl can be reached.
type simLink struct {
	Device    string `json:"device"`
	Transport string `json:"transport"`
	Path      string `json:"path"`
}

// simSummary is the final report.
type simSummary struct {
	Device string       `json:"device"`
	MCU    sim.MCUStats `json:"mcu"`
}

// runSimulate is `bowline-edge simulate`: N bowls whose MCU models speak
// the firmware protocol over a pty each (the gateway opens the printed tty
// path as a serial port) or a Unix socket each (the gateway dials it).
func runSimulate(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bowline-edge simulate", "simulated bowls that speak the firmware protocol",
		"bowline-edge simulate [--bowls N] [--speed X] [--duration D] [--transport pty|unix] [--truth FILE] [--json]")
	bowls := fs.Int("bowls", 1, "number of bowls (device ids bowl-000, bowl-001, ...)")
	seed := fs.Uint64("seed", 1, "random seed; the same seed and flags give the same readings and truth")
	speed := fs.Float64("speed", 1, "simulated seconds per real second; 0 = as fast as the gateway acknowledges, losing nothing")
	duration := fs.Duration("duration", 24*time.Hour, "simulated time to run")
	start := fs.String("start", "", "simulated wall time at boot, RFC 3339 (default: now, so the gateway's clock agrees at --speed 1)")
	transportName := fs.String("transport", "pty", "pty (print a tty path per bowl) or unix (a socket per bowl in --dir)")
	dir := fs.String("dir", "", "directory for unix sockets (default: a new temporary directory)")
	truthPath := fs.String("truth", "", "write the ground truth as JSON lines to this file (- for stderr)")
	rate := fs.Int("rate", 50, "load cell sample rate in Hz (1..50)")
	pets := fs.Int("pets", 2, "pets with RFID tags per bowl (1..4)")
	ring := fs.Int("ring", 64, "MCU retransmit ring size in frames")
	corrupt := fs.Float64("corrupt", 0, "probability that a frame the MCU sends is corrupted (link damage)")
	linger := fs.Duration("linger", 30*time.Second, "after the simulation, wait this long for the gateway to acknowledge every frame")
	jsonOut := fs.Bool("json", false, "print links and the final report as JSON lines")
	var faults faultFlags
	fs.Var(&faults, "fault", "raise a fault on every bowl at a simulated time: AFTER:CODE[:DETAIL] (repeatable; codes load_cell, tag_reader, brownout, sensor_drift); SIGUSR1 raises load_cell now")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *transportName != "pty" && *transportName != "unix" {
		return fmt.Errorf("%w: --transport %q: want pty or unix", cli.ErrUsage, *transportName)
	}
	if *corrupt < 0 || *corrupt > 1 {
		return fmt.Errorf("%w: --corrupt %v: want 0..1", cli.ErrUsage, *corrupt)
	}
	startAt := time.Now().UTC().Truncate(time.Second)
	if *start != "" {
		t, err := time.Parse(time.RFC3339, *start)
		if err != nil {
			return fmt.Errorf("%w: --start %q: %v", cli.ErrUsage, *start, err)
		}
		startAt = t
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	var onTruth func(sim.Truth)
	truthErr := func() error { return nil }
	if *truthPath != "" {
		var w io.Writer = os.Stderr
		if *truthPath != "-" {
			f, err := os.Create(*truthPath)
			if err != nil {
				return fmt.Errorf("--truth %s: %w", *truthPath, err)
			}
			defer f.Close()
			w = f
		}
		onTruth, truthErr = sim.TruthWriter(w)
	}
	fleet, err := sim.NewFleet(sim.Config{
		Bowls: *bowls, Seed: *seed, Start: startAt, Speed: *speed, SampleRateHz: *rate, PetsPerBowl: *pets,
		RingSize: *ring, Faults: faults, OnTruth: onTruth, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if *transportName == "unix" && *dir == "" {
		d, err := os.MkdirTemp("", "bowline-sim-")
		if err != nil {
			return fmt.Errorf("socket directory: %w", err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	out := json.NewEncoder(os.Stdout)
	for i, b := range fleet.Bowls() {
		var l simLink
		serve, err := openSimLink(ctx, *transportName, *dir, b, *corrupt, *seed+uint64(i), log, &l)
		if err != nil {
			return err
		}
		wg.Go(serve)
		if *jsonOut {
			out.Encode(l)
		} else {
			fmt.Printf("%s %s %s\n", l.Device, l.Transport, l.Path)
		}
	}

	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	wg.Go(func() {
		for {
			select {
			case <-usr1:
				for _, b := range fleet.Bowls() {
					b.InjectFault(frame.FaultLoadCell, "injected by SIGUSR1")
				}
			case <-ctx.Done():
				return
			}
		}
	})

	simErr := fleet.Simulate(ctx, *duration)
	if simErr == nil {
		drain(ctx, fleet, *linger)
	}
	for _, b := range fleet.Bowls() {
		s := simSummary{Device: b.ID(), MCU: b.MCU().Stats()}
		if *jsonOut {
			out.Encode(s)
		} else {
			fmt.Printf("%s: accepted %d, refused %d, transmitted %d (retransmitted %d), freed %d, in ring %d\n",
				s.Device, s.MCU.Accepted, s.MCU.Refused, s.MCU.Transmitted, s.MCU.Retransmitted, s.MCU.Freed, s.MCU.RingLen)
		}
	}
	if err := truthErr(); err != nil {
		return fmt.Errorf("--truth %s: %w", *truthPath, err)
	}
	if simErr != nil && !errors.Is(simErr, context.Canceled) {
		return simErr
	}
	return nil
}

// drain waits up to linger for every MCU ring to empty.
func drain(ctx context.Context, fleet *sim.Fleet, linger time.Duration) {
	deadline := time.Now().Add(linger)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		empty := true
		for _, b := range fleet.Bowls() {
			if b.MCU().Stats().RingLen > 0 {
				empty = false
			}
		}
		if empty {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openSimLink opens bowl b's link and returns the function that serves
// it until ctx ends. A pty stays open across gateway restarts (this process
// holds the tty too); a unix socket accepts one gateway at a time.
func openSimLink(ctx context.Context, kind, dir string, b *sim.Bowl, corrupt float64, seed uint64, log *slog.Logger, l *simLink) (func(), error) {
	wrap := func(rw io.ReadWriter) io.ReadWriter {
		if corrupt > 0 {
			return sim.NewLossy(rw, corrupt, 0, seed)
		}
		return rw
	}
	l.Device, l.Transport = b.ID(), kind
	if kind == "pty" {
		p, err := transport.OpenPTY()
		if err != nil {
			return nil, err
		}
		l.Path = p.Path
		return func() {
			defer p.Close()
			if err := b.MCU().Run(ctx, wrap(p.Master)); err != nil && ctx.Err() == nil {
				log.Error("simulate: pty link failed", "device", b.ID(), "err", err)
			}
		}, nil
	}
	l.Path = filepath.Join(dir, b.ID()+".sock")
	ln, err := transport.ListenUnix(l.Path)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { ln.Close() })
	return func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
					log.Error("simulate: accept", "device", b.ID(), "err", err)
				}
				return
			}
			if err := b.MCU().Run(ctx, wrap(c)); err != nil && ctx.Err() == nil {
				log.Info("simulate: gateway disconnected", "device", b.ID(), "err", err)
			}
			c.Close()
		}
	}, nil
}
