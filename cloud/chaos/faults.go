package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// applyFaults runs the schedule from start until it ends or ctx does; each
// fault heals after its For.
func (r *run) applyFaults(ctx context.Context, start time.Time, out *bytes.Buffer) {
	var wg sync.WaitGroup
	for _, f := range r.sched {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-time.After(time.Until(start.Add(f.At))):
		}
		heal, err := r.inject(ctx, f)
		r.mu.Lock()
		if err != nil {
			fmt.Fprintf(out, "  %s: not applied: %v\n", f, err)
		} else {
			r.applied[f.Kind]++
		}
		r.mu.Unlock()
		if heal == nil {
			continue
		}
		wg.Go(func() {
			select {
			case <-ctx.Done():
			case <-time.After(f.For):
			}
			heal()
		})
	}
	wg.Wait()
}

// inject applies one fault and returns how to heal it.
func (r *run) inject(ctx context.Context, f Fault) (func(), error) {
	switch f.Kind {
	case FaultPowerCut:
		p, ok := r.procs[f.Target]
		if !ok || !p.running() {
			return nil, fmt.Errorf("%s is not running", f.Target)
		}
		var g int
		if _, err := fmt.Sscanf(f.Target, "edge-%d", &g); err != nil {
			return nil, fmt.Errorf("power cut of %q: not an edge agent", f.Target)
		}
		return r.powerCut(ctx, g, p)
	case FaultKill:
		p, ok := r.procs[f.Target]
		if !ok {
			return nil, fmt.Errorf("no process %q", f.Target)
		}
		if !p.running() {
			return nil, fmt.Errorf("%s is already down", f.Target)
		}
		p.kill()
		return func() {
			if r.powered(f.Target) {
				_ = p.restart()
			}
		}, nil
	case FaultBroker:
		return r.brokerOutage(ctx)
	case FaultNet:
		if err := r.net.toxic(f.Target, f.Detail); err != nil {
			return nil, err
		}
		return func() { r.net.heal(f.Target, f.Detail) }, nil
	case FaultThrottle:
		t, ok := r.net.thr[f.Target]
		if !ok {
			return nil, fmt.Errorf("no throttle proxy %q", f.Target)
		}
		t.set(true)
		return func() { t.set(false) }, nil
	case FaultProvider:
		fk, gate := r.fakeOf(f.Target), r.gates[f.Target]
		if fk == nil || gate == nil {
			return nil, fmt.Errorf("no provider %q", f.Target)
		}
		if f.Detail == "hang" {
			gate.set(true)
			return func() { gate.set(false) }, nil
		}
		fk.FailNext(1<<30, http.StatusServiceUnavailable)
		return func() { fk.FailNext(0, 0) }, nil
	case FaultBadWebhook:
		status, err := badWebhook(ctx, r.client(tenantOf(0)))
		if err != nil {
			return nil, err
		}
		if status != http.StatusUnauthorized && status != http.StatusBadRequest {
			return nil, fmt.Errorf("bad webhook answered %d; want 401 or 400", status)
		}
		r.mu.Lock()
		r.refused++
		r.mu.Unlock()
		return nil, nil
	}
	return nil, fmt.Errorf("unknown fault kind %q", f.Kind)
}

// healAll ends every fault and restarts whatever is down.
func (r *run) healAll(ctx context.Context) error {
	r.net.healAll()
	for _, g := range r.gates {
		g.set(false)
	}
	for _, f := range r.fakes.All() {
		f.FailNext(0, 0)
	}
	if !r.brokerUp() {
		if err := r.broker.Restart(ctx); err != nil && !r.brokerUp() {
			return fmt.Errorf("restart mosquitto: %w", err)
		}
	}
	r.bootDisks()
	for _, p := range r.procs {
		if err := p.restart(); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) brokerUp() bool { return r.broker.Pid() != 0 }
