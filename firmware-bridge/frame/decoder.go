package frame

import (
	"io"
	"sync/atomic"
)

// Stats counts what a Decoder has seen. Dropped is indexed by Reason.
type Stats struct {
	Frames  uint64             // valid frames returned
	Empty   uint64             // empty frames (two delimiters in a row), ignored
	Bytes   uint64             // bytes read
	Dropped [numReasons]uint64 // invalid frames skipped, by reason
}

// DroppedTotal is the number of invalid frames skipped for any reason.
func (s Stats) DroppedTotal() uint64 {
	var n uint64
	for _, d := range s.Dropped {
		n += d
	}
	return n
}

// Decoder reads frames from a byte stream. It holds at most MaxEncoded
// bytes of a frame in progress: a longer run without a delimiter is dropped
// as oversize and the Decoder skips to the next delimiter. It never panics
// on any input.
type Decoder struct {
	r io.Reader
	// OnDrop, when set, is called for every dropped frame with its reason
	// and error (for logging or metrics); it must not block.
	OnDrop func(Reason, error)

	in       [4096]byte
	inStart  int
	inEnd    int
	acc      [MaxEncoded]byte
	accN     int
	overflow bool
	raw      [MaxRaw]byte

	frames, empty, bytes atomic.Uint64
	dropped              [numReasons]atomic.Uint64
}

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: r}
}

// Stats returns the counters so far; it is safe to call concurrently with
// Next.
func (d *Decoder) Stats() Stats {
	s := Stats{Frames: d.frames.Load(), Empty: d.empty.Load(), Bytes: d.bytes.Load()}
	for i := range s.Dropped {
		s.Dropped[i] = d.dropped[i].Load()
	}
	return s
}

// Next returns the next valid frame. Invalid frames are counted, reported
// to OnDrop and skipped. The error is the reader's (io.EOF included); bytes
// of an unterminated frame at EOF are discarded.
func (d *Decoder) Next() (Frame, error) {
	for {
		for d.inStart < d.inEnd {
			c := d.in[d.inStart]
			d.inStart++
			if c != 0 {
				if d.accN == len(d.acc) {
					d.overflow = true
					continue
				}
				d.acc[d.accN] = c
				d.accN++
				continue
			}
			f, ok := d.finish()
			if ok {
				return f, nil
			}
		}
		n, err := d.r.Read(d.in[:])
		d.inStart, d.inEnd = 0, n
		d.bytes.Add(uint64(n))
		if n == 0 && err != nil {
			return Frame{}, err
		}
	}
}

// finish handles the bytes accumulated before a delimiter.
func (d *Decoder) finish() (Frame, bool) {
	acc, overflow := d.acc[:d.accN], d.overflow
	d.accN, d.overflow = 0, false
	switch {
	case overflow:
		d.drop(ErrOversize)
		return Frame{}, false
	case len(acc) == 0:
		d.empty.Add(1)
		return Frame{}, false
	}
	n, err := decodeCOBS(d.raw[:], acc)
	if err != nil {
		d.drop(err)
		return Frame{}, false
	}
	f, err := Unmarshal(d.raw[:n])
	if err != nil {
		d.drop(err)
		return Frame{}, false
	}
	d.frames.Add(1)
	return f, true
}

func (d *Decoder) drop(err error) {
	r, ok := ReasonOf(err)
	if !ok {
		r = ReasonCOBS
	}
	d.dropped[r].Add(1)
	if d.OnDrop != nil {
		d.OnDrop(r, err)
	}
}
