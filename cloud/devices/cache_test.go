package devices_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/cloud/devices"
)

// nobody is a registry in which no thing is registered.
type nobody struct{ reads atomic.Int64 }

func (n *nobody) Lookup(_ context.Context, thing string) (devices.Device, error) {
	n.reads.Add(1)
	return devices.Device{}, fmt.Errorf("thing %q: %w", thing, devices.ErrUnknownDevice)
}

// Unknown things are cached for UnknownTTL, and the cache never holds more
// than MaxEntries things however many names the topics carry.
func TestCacheBoundsUnknownThings(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	reg := &nobody{}
	c, err := devices.NewCache(reg, devices.CacheConfig{UnknownTTL: time.Minute, MaxEntries: 100, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 5 {
		if _, err := c.Lookup(ctx, "ghost"); err == nil {
			t.Fatal("Lookup(ghost) = nil error; want ErrUnknownDevice")
		}
	}
	if got := reg.reads.Load(); got != 1 {
		t.Errorf("registry reads for 5 lookups of one unknown thing = %d; want 1", got)
	}
	for i := range 1000 {
		_, _ = c.Lookup(ctx, fmt.Sprintf("ghost-%d", i))
	}
	if got := c.Len(); got > 100 {
		t.Errorf("cached things = %d; want at most MaxEntries 100", got)
	}
	now = now.Add(2 * time.Minute)
	_, _ = c.Lookup(ctx, "ghost")
	if got := c.Reads(); got != 1002 {
		t.Errorf("reads after the negative entry expired = %d; want 1002", got)
	}
}

// everyone is a registry in which every thing is registered to tenant t1.
type everyone struct{ reads atomic.Int64 }

func (e *everyone) Lookup(_ context.Context, thing string) (devices.Device, error) {
	e.reads.Add(1)
	return devices.Device{Thing: thing, Tenant: "t1"}, nil
}

// Things cached at one instant (a cold start) do not all expire at one
// instant: each entry lives 90-100 % of the TTL, never more.
func TestCacheSpreadsExpiries(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	reg := &everyone{}
	c, err := devices.NewCache(reg, devices.CacheConfig{TTL: 10 * time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lookAll := func() int64 {
		before := reg.reads.Load()
		for i := range 200 {
			if _, err := c.Lookup(ctx, fmt.Sprintf("gw-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		return reg.reads.Load() - before
	}
	if n := lookAll(); n != 200 {
		t.Fatalf("cold lookups read the registry %d times; want 200", n)
	}
	now = now.Add(9*time.Minute - time.Second)
	if n := lookAll(); n != 0 {
		t.Errorf("just under 90 %% of the TTL, %d entries had expired; want 0", n)
	}
	now = now.Add(30 * time.Second) // 95 % of the TTL, give or take
	if n := lookAll(); n == 0 || n == 200 {
		t.Errorf("at about 95 %% of the TTL, %d of 200 entries had expired; want some and not all (spread expiries)", n)
	}
}
