package sim

import (
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Lossy wraps a link and damages what is written through it, one Write
// being one frame: with probability Corrupt a random bit of a random byte
// is flipped (which may create a 0x00 and split the frame), and with
// probability Drop a random byte is removed. Reads pass through. It is
// deterministic for a given seed and sequence of writes.
type Lossy struct {
	io.ReadWriter
	Corrupt, Drop float64

	mu        sync.Mutex
	rng       *rand.Rand
	corrupted atomic.Uint64
	dropped   atomic.Uint64
}

// NewLossy wraps link with the given probabilities and seed.
func NewLossy(link io.ReadWriter, corrupt, drop float64, seed uint64) *Lossy {
	return &Lossy{ReadWriter: link, Corrupt: corrupt, Drop: drop, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// Write damages p (a copy) as configured and writes it.
func (l *Lossy) Write(p []byte) (int, error) {
	l.mu.Lock()
	out := p
	if len(p) > 1 && l.rng.Float64() < l.Corrupt {
		out = append([]byte(nil), p...)
		out[l.rng.IntN(len(out)-1)] ^= 1 << l.rng.IntN(8)
		l.corrupted.Add(1)
	}
	if len(out) > 1 && l.rng.Float64() < l.Drop {
		i := l.rng.IntN(len(out) - 1)
		out = append(append([]byte(nil), out[:i]...), out[i+1:]...)
		l.dropped.Add(1)
	}
	l.mu.Unlock()
	if _, err := l.ReadWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close closes the wrapped link if it is an io.Closer.
func (l *Lossy) Close() error {
	if c, ok := l.ReadWriter.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Damaged returns how many writes were corrupted and how many lost a byte.
func (l *Lossy) Damaged() (corrupted, dropped uint64) {
	return l.corrupted.Load(), l.dropped.Load()
}

// BaudMeter wraps a link and turns the bytes written through it into time
// on a UART of the given baud rate (10 bits per byte: start, 8 data, stop),
// without waiting for it. Its Uptime is a device clock for MCUConfig that
// advances exactly as a real MCU's would at that rate.
type BaudMeter struct {
	io.ReadWriter
	Baud  int
	bytes atomic.Int64
}

// Write counts p and writes it.
func (b *BaudMeter) Write(p []byte) (int, error) {
	b.bytes.Add(int64(len(p)))
	return b.ReadWriter.Write(p)
}

// Close closes the wrapped link if it is an io.Closer.
func (b *BaudMeter) Close() error {
	if c, ok := b.ReadWriter.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Uptime is the simulated milliseconds the written bytes take on the wire.
func (b *BaudMeter) Uptime() uint32 {
	return uint32(b.bytes.Load() * 10 * 1000 / int64(b.Baud))
}
