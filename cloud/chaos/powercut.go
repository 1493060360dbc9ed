package chaos

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/bowline-iot/bowline/internal/powercut"
)

// edgeDisks mounts one power-cut filesystem (internal/powercut) per
// gateway for its outbox, when FUSE is available here; otherwise it
// returns nil and a power cut is a SIGKILL of the agent (the page cache
// then survives, so it proves less: the report says which it was).
func (r *run) edgeDisks() (map[int]*powercut.Disk, error) {
	if err := powercut.Available(); err != nil {
		r.log.Warn("no FUSE here: power cuts are SIGKILLs of the agent", "err", err)
		return nil, nil
	}
	disks := map[int]*powercut.Disk{}
	for g := range r.cfg.Gateways {
		d, err := powercut.Mount(powercut.Options{
			Mountpoint: filepath.Join(r.dir, fmt.Sprintf("edge-%d-disk", g)),
			Backing:    filepath.Join(r.dir, fmt.Sprintf("edge-%d-backing", g)),
			Logger:     r.log.With("part", "powercut", "gateway", g),
		})
		if err != nil {
			for _, d := range disks {
				_ = d.Close()
			}
			return nil, fmt.Errorf("power-cut disk of gateway %d: %w", g, err)
		}
		disks[g] = d
	}
	return disks, nil
}

// outboxPath is where gateway g keeps its outbox: on its power-cut disk
// when there is one.
func (r *run) outboxPath(g int) string {
	if d, ok := r.disks[g]; ok {
		return filepath.Join(d.Dir(), "outbox.db")
	}
	return filepath.Join(r.dir, fmt.Sprintf("edge-%d.db", g))
}

// powerCut cuts gateway g's power: the disk stops taking writes, the agent
// is killed, unsynced writes are forgotten. The heal boots the disk and
// starts the agent.
func (r *run) powerCut(ctx context.Context, g int, p *proc) (func(), error) {
	d, ok := r.disks[g]
	if !ok {
		p.kill()
		return func() { _ = p.restart() }, nil
	}
	if err := d.Cut(ctx, p.kill); err != nil {
		return nil, fmt.Errorf("power cut of gateway %d: %w", g, err)
	}
	r.mu.Lock()
	r.cuts++
	r.unpowered[g] = true
	r.mu.Unlock()
	return func() {
		if err := d.Boot(); err != nil {
			r.log.Error("boot power-cut disk", "gateway", g, "err", err)
			return
		}
		r.mu.Lock()
		delete(r.unpowered, g)
		r.mu.Unlock()
		_ = p.restart()
	}, nil
}

// bootDisks powers every cut disk on again (before the final restarts).
func (r *run) bootDisks() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for g := range r.unpowered {
		if err := r.disks[g].Boot(); err != nil {
			r.log.Error("boot power-cut disk", "gateway", g, "err", err)
			continue
		}
		delete(r.unpowered, g)
	}
}

// powered reports whether process name may start: an edge agent only
// while its disk is mounted (started on the bare mount point, it would
// write an outbox that the next boot hides).
func (r *run) powered(name string) bool {
	var g int
	if _, err := fmt.Sscanf(name, "edge-%d", &g); err != nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.unpowered[g]
}
