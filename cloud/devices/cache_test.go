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
