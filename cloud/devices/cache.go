package devices

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// CacheConfig bounds a Cache. Zero fields take their defaults.
type CacheConfig struct {
	// TTL is how long a registered device's tenant is served from the
	// cache; default 1 min. Each entry lives a random 90-100 % of its TTL
	// (TTL or UnknownTTL), never longer: things looked up together (every
	// gateway of a shard, after a cold start) do not all expire together
	// and read the registry in one burst, again each TTL.
	TTL time.Duration
	// UnknownTTL is how long "not registered" is served from the cache, so
	// a flood of messages from unknown things costs one registry read per
	// thing per UnknownTTL, not one per message; default 30 s. A thing
	// registered meanwhile is accepted at most UnknownTTL later.
	UnknownTTL time.Duration
	// MaxEntries bounds the cached things, known and unknown together;
	// default 10000. When full, expired entries go first, then arbitrary
	// ones: the cache never grows past it, whatever the topics name.
	MaxEntries int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Looker is what a Cache reads through; *Registry is one.
type Looker interface {
	// Lookup returns thing's registration, or an error matching
	// ErrUnknownDevice when it has none.
	Lookup(ctx context.Context, thing string) (Device, error)
}

var _ Looker = (*Registry)(nil)

// Cache answers registry lookups from memory, negative answers included. It
// is safe for concurrent use.
type Cache struct {
	reg Looker
	cfg CacheConfig

	mu      sync.Mutex
	entries map[string]cacheEntry
	reads   int64
	// pending holds the lookups in flight: concurrent misses for one thing
	// share one registry read.
	pending map[string]*pendingLookup
}

type pendingLookup struct {
	done chan struct{}
	dev  Device
	err  error
}

type cacheEntry struct {
	dev     Device
	unknown bool
	expires time.Time
}

// NewCache returns a Cache in front of reg.
func NewCache(reg Looker, cfg CacheConfig) (*Cache, error) {
	if reg == nil {
		return nil, errors.New("devices: cache needs a registry")
	}
	if cfg.TTL < 0 || cfg.UnknownTTL < 0 || cfg.MaxEntries < 0 {
		return nil, fmt.Errorf("devices: cache TTL %v, UnknownTTL %v and MaxEntries %d must not be negative", cfg.TTL, cfg.UnknownTTL, cfg.MaxEntries)
	}
	if cfg.TTL == 0 {
		cfg.TTL = time.Minute
	}
	if cfg.UnknownTTL == 0 {
		cfg.UnknownTTL = 30 * time.Second
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 10000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Cache{reg: reg, cfg: cfg, entries: map[string]cacheEntry{}, pending: map[string]*pendingLookup{}}, nil
}

// Lookup returns thing's registration like Registry.Lookup, from the cache
// while its entry is fresh; concurrent misses for one thing share one
// registry read. Other errors (the registry unreachable) are returned and
// not cached.
func (c *Cache) Lookup(ctx context.Context, thing string) (Device, error) {
	now := c.cfg.Now()
	c.mu.Lock()
	e, ok := c.entries[thing]
	if ok && now.Before(e.expires) {
		c.mu.Unlock()
		if e.unknown {
			return Device{}, fmt.Errorf("thing %q (cached): %w", thing, ErrUnknownDevice)
		}
		return e.dev, nil
	}
	if p, ok := c.pending[thing]; ok {
		c.mu.Unlock()
		select {
		case <-p.done:
			return p.dev, p.err
		case <-ctx.Done():
			return Device{}, fmt.Errorf("look up thing %q: %w", thing, ctx.Err())
		}
	}
	p := &pendingLookup{done: make(chan struct{})}
	c.pending[thing] = p
	c.reads++
	c.mu.Unlock()

	p.dev, p.err = c.reg.Lookup(ctx, thing)
	c.mu.Lock()
	delete(c.pending, thing)
	switch {
	case errors.Is(p.err, ErrUnknownDevice):
		c.put(thing, cacheEntry{unknown: true, expires: now.Add(jittered(c.cfg.UnknownTTL))}, now)
	case p.err == nil:
		c.put(thing, cacheEntry{dev: p.dev, expires: now.Add(jittered(c.cfg.TTL))}, now)
	}
	c.mu.Unlock()
	close(p.done)
	return p.dev, p.err
}

// jittered is a random life of 90-100 % of ttl.
func jittered(ttl time.Duration) time.Duration {
	return ttl - time.Duration(rand.Float64()*0.1*float64(ttl))
}

// Forget drops thing's entry, so the next Lookup reads the registry.
func (c *Cache) Forget(thing string) {
	c.mu.Lock()
	delete(c.entries, thing)
	c.mu.Unlock()
}

// Reads is how many registry reads the cache has made.
func (c *Cache) Reads() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// Len is how many things are cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// put stores e under thing, evicting to stay within MaxEntries; c.mu held.
func (c *Cache) put(thing string, e cacheEntry, now time.Time) {
	if _, ok := c.entries[thing]; !ok && len(c.entries) >= c.cfg.MaxEntries {
		for k, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.cfg.MaxEntries {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[thing] = e
}
