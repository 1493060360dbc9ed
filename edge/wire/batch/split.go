package batch

import (
	"fmt"

	"github.com/bowline-iot/bowline/edge/wire"
)

// Split encodes b into as many payloads as it takes, each at most maxBytes
// (1..wire.MaxPayload) and MaxSamples samples. Every sample is in exactly
// one payload, in b's order; a series may be split between samples, and
// every payload carries b's Outbox and SentAt. An empty batch gives no
// payload. It fails with ErrMaxBytes when one sample alone does not fit,
// and with a *FormatError as Encode does.
func Split(b Batch, maxBytes int) ([][]byte, error) {
	if maxBytes < 1 || maxBytes > wire.MaxPayload {
		return nil, fmt.Errorf("split: %w: maxBytes %d; want 1 to %d", ErrMaxBytes, maxBytes, wire.MaxPayload)
	}
	// Check the whole batch first, so a bad sample fails the call
	// before any payload is made, with the field named as in b.
	total := 0
	seen := make(map[string]int, len(b.Things))
	for i, s := range b.Things {
		field := fmt.Sprintf("things[%d]", i)
		if len(s.Samples) == 0 {
			return nil, formatErr(field+".values", "no samples; want at least one")
		}
		if j, ok := seen[s.Thing]; ok {
			return nil, formatErr(field+".thing", "%q is also things[%d]; want each thing once", s.Thing, j)
		}
		seen[s.Thing] = i
		total += len(s.Samples)
	}
	if total <= MaxSamples {
		p, err := Encode(b)
		if err != nil {
			return nil, err
		}
		if len(p) <= maxBytes {
			if total == 0 {
				return nil, nil
			}
			return [][]byte{p}, nil
		}
	} else if _, err := build(Batch{Outbox: b.Outbox, SentAt: b.SentAt}); err != nil {
		return nil, err
	}

	var out [][]byte
	c := cursor{b: b}
	guess := 0
	for !c.done() {
		left := c.left()
		// lo fits, hi does not (or is past the end): find the most
		// samples that fit by bisection, starting from the last size.
		hi := min(left, MaxSamples) + 1
		lo := 0
		var best []byte
		try := func(k int) (bool, error) {
			p, err := Encode(c.take(k))
			if err != nil {
				return false, err
			}
			if len(p) <= maxBytes {
				lo, best = k, p
				return true, nil
			}
			hi = k
			return false, nil
		}
		if guess > 0 && guess < hi {
			if _, err := try(guess); err != nil {
				return nil, err
			}
			if lo == guess && guess*2 < hi {
				if _, err := try(guess * 2); err != nil {
					return nil, err
				}
			}
		}
		for hi-lo > 1 {
			if _, err := try(lo + (hi-lo)/2); err != nil {
				return nil, err
			}
		}
		if lo == 0 {
			first := c.take(1).Things[0]
			return nil, fmt.Errorf("split: %w: one sample of thing %s (seq %d) does not fit in %d bytes",
				ErrMaxBytes, first.Thing, first.Samples[0].Seq, maxBytes)
		}
		out = append(out, best)
		c.advance(lo)
		guess = lo
	}
	return out, nil
}

// cursor walks the samples of a batch in order.
type cursor struct {
	b      Batch
	series int // current series
	sample int // next sample in it
}

func (c *cursor) skipEmpty() {
	for c.series < len(c.b.Things) && c.sample >= len(c.b.Things[c.series].Samples) {
		c.series++
		c.sample = 0
	}
}

func (c *cursor) done() bool { c.skipEmpty(); return c.series >= len(c.b.Things) }

func (c *cursor) left() int {
	c.skipEmpty()
	n := 0
	for i := c.series; i < len(c.b.Things); i++ {
		n += len(c.b.Things[i].Samples)
	}
	return n - c.sample
}

// take returns a batch of the next k samples, without advancing.
func (c *cursor) take(k int) Batch {
	c.skipEmpty()
	out := Batch{Outbox: c.b.Outbox, SentAt: c.b.SentAt}
	i, j := c.series, c.sample
	for k > 0 && i < len(c.b.Things) {
		s := c.b.Things[i]
		n := min(k, len(s.Samples)-j)
		if n > 0 {
			out.Things = append(out.Things, Series{Thing: s.Thing, Samples: s.Samples[j : j+n]})
			k -= n
		}
		i, j = i+1, 0
	}
	return out
}

// advance moves past k samples.
func (c *cursor) advance(k int) {
	for k > 0 {
		c.skipEmpty()
		n := min(k, len(c.b.Things[c.series].Samples)-c.sample)
		c.sample += n
		k -= n
	}
}
