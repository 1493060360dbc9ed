package powercut

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ErrNoFUSE means the machine cannot mount FUSE filesystems.
var ErrNoFUSE = errors.New("powercut: /dev/fuse is not available (FUSE needs the fuse3 package and access to /dev/fuse)")

// Options configure a Disk.
type Options struct {
	// Mountpoint is where the filesystem appears; created if missing.
	// Required.
	Mountpoint string
	// Backing is the directory that holds the synced state (the "disk").
	// Required; it may already hold the state of an earlier Disk.
	Backing string
	// Strict makes namespace changes durable only at a directory fsync
	// (POSIX); by default any fsync commits them (ext4 in practice).
	Strict bool
	// Logger receives mount and unmount notes. Default: discarded.
	Logger *slog.Logger
}

// Stats counts what the Disk did over all its boots.
type Stats struct {
	Boots, Cuts int
	// Syncs counts fsync and fdatasync calls, Torn the ones cut short.
	Syncs, Torn int
	// Discarded counts bytes of dirty pages thrown away at cuts and torn
	// syncs.
	Discarded int64
}

// TearFunc decides whether a sync is torn. It is called at each fsync of a
// regular file while a tear is armed, with the file's path relative to the
// mount and its dirty extents in offset order; returning ok=true tears
// that sync, letting the first keep bytes of the extents reach the disk.
type TearFunc func(path string, pending []Extent) (keep int64, ok bool)

// Disk is a mounted power-cut filesystem. Its methods are safe for
// concurrent use, but a cut and a boot must not race each other.
type Disk struct {
	opts  Options
	st    store
	mu    sync.Mutex
	vol   *volume
	srv   *fuse.Server
	stats Stats
}

// Available reports whether FUSE can be mounted here.
func Available() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoFUSE, err)
	}
	return f.Close()
}

// Mount boots a Disk from the synced state in opts.Backing.
func Mount(opts Options) (*Disk, error) {
	switch {
	case opts.Mountpoint == "":
		return nil, errors.New("powercut: Options.Mountpoint is required")
	case opts.Backing == "":
		return nil, errors.New("powercut: Options.Backing is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Mountpoint, 0o755); err != nil {
		return nil, fmt.Errorf("powercut: mountpoint %s: %w", opts.Mountpoint, err)
	}
	d := &Disk{opts: opts, st: store{dir: opts.Backing}}
	if err := d.st.init(); err != nil {
		return nil, err
	}
	if err := d.Boot(); err != nil {
		return nil, err
	}
	return d, nil
}

// Dir is the mount point.
func (d *Disk) Dir() string { return d.opts.Mountpoint }

// Stats returns the counters so far.
func (d *Disk) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.vol != nil {
		d.vol.mu.Lock()
		defer d.vol.mu.Unlock()
	}
	return d.stats
}

// Boot mounts the synced state. It is an error while mounted.
func (d *Disk) Boot() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.srv != nil {
		return errors.New("powercut: already mounted")
	}
	v, err := load(d.st, d.opts.Strict, &d.stats)
	if err != nil {
		return err
	}
	sec := time.Second
	srv, err := fs.Mount(d.opts.Mountpoint, v.root, &fs.Options{
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		MountOptions: fuse.MountOptions{
			FsName:      "powercut",
			Name:        "powercut",
			DirectMount: true, // we may be root; falls back to fusermount3
			// direct_io stays off: bbolt's mmap needs the page cache.
		},
	})
	if err != nil {
		return fmt.Errorf("powercut: mount %s: %w", d.opts.Mountpoint, err)
	}
	d.vol, d.srv = v, srv
	d.stats.Boots++
	d.opts.Logger.Debug("powercut: mounted", "mountpoint", d.opts.Mountpoint)
	return nil
}

// Sync is sync(2): everything written so far becomes durable. Use it for
// setup files written by code that never syncs (configs).
func (d *Disk) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.vol == nil {
		return errors.New("powercut: not mounted")
	}
	d.vol.mu.Lock()
	defer d.vol.mu.Unlock()
	if d.vol.dead {
		return errors.New("powercut: power is off")
	}
	return d.vol.syncAll()
}

// TearNextSync arms a tear (see TearFunc); it stays armed until a sync is
// torn or the next cut.
func (d *Disk) TearNextSync(f TearFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.vol != nil {
		d.vol.mu.Lock()
		d.vol.tear = f
		d.vol.mu.Unlock()
	}
}

// Dead reports whether the device has stopped (a torn sync stops it).
func (d *Disk) Dead() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.vol == nil {
		return true
	}
	d.vol.mu.Lock()
	defer d.vol.mu.Unlock()
	return d.vol.dead
}

// Cut cuts the power: from this instant nothing more reaches the disk and
// every operation fails with EIO; then kill runs (it must SIGKILL every
// process using the mount and wait for them to exit), the filesystem is
// unmounted and every unsynced write and namespace change is forgotten.
// Call Boot to power on again.
func (d *Disk) Cut(ctx context.Context, kill func()) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.srv == nil {
		return errors.New("powercut: not mounted")
	}
	v := d.vol
	v.mu.Lock()
	v.dead = true
	v.tear = nil
	var lost int64
	var walk func(dn *dirNode)
	walk = func(dn *dirNode) {
		for _, c := range dn.children {
			switch c := c.(type) {
			case *fileNode:
				for _, e := range c.pending() {
					lost += e.Len
				}
			case *dirNode:
				walk(c)
			}
		}
	}
	walk(v.root)
	d.stats.Discarded += lost
	d.stats.Cuts++
	v.mu.Unlock()
	if kill != nil {
		kill()
	}
	if err := d.unmount(ctx); err != nil {
		return err
	}
	d.vol, d.srv = nil, nil
	return nil
}

// unmount retries while the kernel still reports the mount busy (a killed
// process's files are closed asynchronously).
func (d *Disk) unmount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := d.srv.Unmount()
		if err == nil {
			d.srv.Wait()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("powercut: unmount %s: %w", d.opts.Mountpoint, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close unmounts without a cut (nothing more is synced either).
func (d *Disk) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.srv == nil {
		return nil
	}
	d.vol.mu.Lock()
	d.vol.dead = true
	d.vol.mu.Unlock()
	err := d.unmount(context.Background())
	d.vol, d.srv = nil, nil
	return err
}
