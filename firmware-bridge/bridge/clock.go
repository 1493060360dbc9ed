package bridge

import "time"

// clockSamples is how many recent time syncs the offset is chosen from.
const clockSamples = 8

// clock maps device uptime to wall time. It unwraps the 32-bit millisecond
// uptime and estimates offset = wall - uptime from time-sync round trips,
// NTP-style: of the last clockSamples round trips it trusts the one with
// the smallest round-trip time, assuming the reply was stamped halfway.
// Until the first round trip it uses the arrival of the Hello.
type clock struct {
	haveRaw bool
	lastRaw uint32
	last    time.Duration // unwrapped uptime of lastRaw

	offset  time.Duration
	samples [clockSamples]struct{ offset, rtt time.Duration }
	n       int
}

// unwrap turns a raw uptime into a monotonic duration, treating a step of
// less than half the range as forward or backward motion (a retransmitted
// frame carries an older uptime).
func (c *clock) unwrap(raw uint32) time.Duration {
	if !c.haveRaw {
		c.haveRaw, c.lastRaw, c.last = true, raw, time.Duration(raw)*time.Millisecond
		return c.last
	}
	d := time.Duration(int32(raw-c.lastRaw)) * time.Millisecond
	u := c.last + d
	if d > 0 {
		c.lastRaw, c.last = raw, u
	}
	return u
}

// reset forgets the uptime anchor (the MCU rebooted) and the samples.
func (c *clock) reset() { *c = clock{} }

// anchor sets a first rough offset from a frame that arrived at recv.
func (c *clock) anchor(recv time.Time, uptime time.Duration) {
	if c.n == 0 {
		c.offset = time.Duration(recv.UnixNano()) - uptime
	}
}

// observe records a time sync sent at sent, answered at recv by a frame
// stamped uptime; it returns the new offset and the round trip.
func (c *clock) observe(sent, recv time.Time, uptime time.Duration) (time.Duration, time.Duration) {
	rtt := recv.Sub(sent)
	mid := sent.Add(rtt / 2)
	c.samples[c.n%clockSamples] = struct{ offset, rtt time.Duration }{time.Duration(mid.UnixNano()) - uptime, rtt}
	c.n++
	best := c.samples[0]
	for i := 1; i < min(c.n, clockSamples); i++ {
		if c.samples[i].rtt < best.rtt {
			best = c.samples[i]
		}
	}
	c.offset = best.offset
	return c.offset, rtt
}

// wall maps an unwrapped uptime to wall time.
func (c *clock) wall(uptime time.Duration) time.Time {
	return time.Unix(0, int64(c.offset+uptime))
}
