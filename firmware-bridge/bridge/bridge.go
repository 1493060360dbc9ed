package bridge

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// Bridge connects MCU links to a Sink. One Bridge may Run many links at
// once, one per device.
type Bridge struct {
	cfg   Config
	stats struct {
		delivered, duplicates, gaps, resends, acks, deliverErrors, resets atomic.Uint64
	}
}

// Stats are a Bridge's counters over all its Runs.
type Stats struct {
	Delivered     uint64 // records the sink confirmed
	Duplicates    uint64 // frames dropped as already accepted
	Gaps          uint64 // frames dropped after a hole
	Resends       uint64 // resend requests sent
	Acks          uint64 // acks sent, repeated ones included
	DeliverErrors uint64 // failed Deliver calls
	CounterResets uint64 // hellos with a new boot epoch on a running link
}

// New returns a Bridge; cfg is validated.
func New(cfg Config) (*Bridge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Bridge{cfg: cfg.withDefaults()}, nil
}

// Stats returns the counters so far.
func (b *Bridge) Stats() Stats {
	return Stats{
		Delivered: b.stats.delivered.Load(), Duplicates: b.stats.duplicates.Load(),
		Gaps: b.stats.gaps.Load(), Resends: b.stats.resends.Load(),
		Acks: b.stats.acks.Load(), DeliverErrors: b.stats.deliverErrors.Load(),
		CounterResets: b.stats.resets.Load(),
	}
}

// Run serves one MCU link until ctx ends or the link fails: it asks for a
// Hello, delivers data frames to the Sink, acknowledges what the Sink made
// durable and keeps the clock in sync. It returns ctx.Err() when ctx ends
// and an error wrapping ErrLink when the link fails (io.EOF included).
func (b *Bridge) Run(ctx context.Context, conn io.ReadWriter) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if c, ok := conn.(io.Closer); ok {
			c.Close()
		}
	})
	defer stop()

	l := &link{b: b, cfg: b.cfg, w: conn, tokens: map[uint32]time.Time{}}
	records := make(chan Record, 2*b.cfg.MaxBatch)
	var wg sync.WaitGroup
	wg.Go(func() { l.deliverLoop(ctx, records) })
	wg.Go(func() { l.tickLoop(ctx) })
	err := l.readLoop(ctx, conn, records)
	cancel()
	wg.Wait()
	if parent.Err() != nil {
		return parent.Err()
	}
	return fmt.Errorf("%w: device %q: read: %w", ErrLink, l.deviceName(), err)
}

// link is the state of one Run.
type link struct {
	b   *Bridge
	cfg Config

	wmu   sync.Mutex
	w     io.Writer
	gwSeq uint32
	wbuf  []byte

	mu          sync.Mutex
	device      string
	epoch       uint32 // the hello's boot epoch: names the MCU's counter
	haveHello   bool
	durable     uint32 // last sequence number acknowledged as durable
	tokens      map[uint32]time.Time
	nextToken   uint32
	lastResend  time.Time
	resendFor   uint32
	lastReack   time.Time
	lastSync    time.Time
	lastHelloRq time.Time

	// Owned by the read loop.
	expected uint32
	clk      clock
}

func (l *link) deviceName() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.device
}

// send writes one gateway frame; a failure is logged (the read side will
// see the link fail).
func (l *link) send(body frame.Body) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.gwSeq++
	var err error
	l.wbuf, err = frame.AppendEncoded(l.wbuf[:0], frame.Frame{Seq: l.gwSeq, Body: body})
	if err == nil {
		_, err = l.w.Write(l.wbuf)
	}
	if err != nil {
		l.cfg.Logger.Debug("bridge write", "type", body.Type(), "err", err)
	}
}

func (l *link) sendAck(cum uint32, resend bool) {
	l.b.stats.acks.Add(1)
	if resend {
		l.b.stats.resends.Add(1)
	}
	l.send(frame.Ack{Cumulative: cum, Resend: resend})
	l.cfg.Observer.AckSent(l.deviceName(), cum, resend)
}

func (l *link) sendTimeSync() {
	now := l.cfg.Now()
	l.mu.Lock()
	l.nextToken++
	tok := l.nextToken
	l.tokens[tok] = now
	for t := range l.tokens { // keep the map bounded: forget syncs never answered
		if t+clockSamples < tok {
			delete(l.tokens, t)
		}
	}
	l.lastSync = now
	l.mu.Unlock()
	l.send(frame.TimeSync{Token: tok, UnixMillis: now.UnixMilli()})
}

func (l *link) readLoop(ctx context.Context, r io.Reader, records chan<- Record) error {
	d := frame.NewDecoder(r)
	d.OnDrop = func(r frame.Reason, err error) {
		l.cfg.Observer.FrameDropped(decodeReason(r))
		l.cfg.Logger.Debug("bridge dropped frame", "reason", r, "err", err)
	}
	for {
		f, err := d.Next()
		if err != nil {
			return err
		}
		if !l.handle(ctx, f, records) {
			return ctx.Err()
		}
	}
}

// handle processes one frame; false means ctx ended.
func (l *link) handle(ctx context.Context, f frame.Frame, records chan<- Record) bool {
	now := l.cfg.Now()
	switch b := f.Body.(type) {
	case frame.Hello:
		l.hello(now, f, b)
		return true
	case frame.Pong:
		l.mu.Lock()
		sent, ok := l.tokens[b.Token]
		delete(l.tokens, b.Token)
		dev := l.device
		l.mu.Unlock()
		if ok {
			off, rtt := l.clk.observe(sent, now, l.clk.unwrap(f.UptimeMillis))
			l.cfg.Observer.ClockOffset(dev, off, rtt)
		}
		return true
	}
	if !f.Type().Sequenced() {
		l.cfg.Observer.FrameDropped(DropUnexpectedType)
		return true
	}
	l.mu.Lock()
	dev, epoch, ok := l.device, l.epoch, l.haveHello
	l.mu.Unlock()
	if !ok {
		l.cfg.Observer.FrameDropped(DropBeforeHello)
		return true
	}
	switch {
	case f.Seq == l.expected:
		up := l.clk.unwrap(f.UptimeMillis)
		rec := Record{Device: dev, Epoch: epoch, Seq: f.Seq, Uptime: up, At: l.clk.wall(up), Body: f.Body}
		select {
		case records <- rec:
		case <-ctx.Done():
			return false
		}
		l.expected++
	case seqLE(f.Seq, l.expected-1):
		l.b.stats.duplicates.Add(1)
		l.cfg.Observer.Duplicate(dev, f.Seq)
		l.mu.Lock()
		again := now.Sub(l.lastReack) >= l.cfg.ResendInterval
		if again {
			l.lastReack = now
		}
		cum := l.durable
		l.mu.Unlock()
		if again { // our ack may have been lost
			l.sendAck(cum, false)
		}
	default:
		l.b.stats.gaps.Add(1)
		l.cfg.Observer.SequenceGap(dev, l.expected, f.Seq)
		l.mu.Lock()
		again := l.resendFor != l.expected || now.Sub(l.lastResend) >= l.cfg.ResendInterval
		if again {
			l.resendFor, l.lastResend = l.expected, now
		}
		cum := l.durable
		l.mu.Unlock()
		if again {
			l.sendAck(cum, true)
		}
	}
	return true
}

// hello adopts the MCU's oldest unacknowledged sequence number as the next
// expected one, unless the bridge is already past it (acks in flight). A
// new boot epoch is a new counter: its numbers are adopted even when they
// went back (the MCU's counter was reset, e.g. a flash erase).
func (l *link) hello(now time.Time, f frame.Frame, h frame.Hello) {
	l.mu.Lock()
	first := !l.haveHello
	if !first && l.device != h.DeviceID {
		l.cfg.Logger.Warn("bridge: device changed on the link", "was", l.device, "now", h.DeviceID)
		first = true
	}
	if !first && l.epoch != h.BootEpoch {
		l.b.stats.resets.Add(1)
		l.cfg.Logger.Warn("bridge: mcu counter reset (new boot epoch)", "device", h.DeviceID, "old_epoch", l.epoch, "new_epoch", h.BootEpoch, "next_seq", f.Seq)
		first = true
	}
	l.device, l.epoch, l.haveHello = h.DeviceID, h.BootEpoch, true
	if first || !seqLE(f.Seq, l.expected) {
		if !first {
			l.b.stats.gaps.Add(1)
			l.cfg.Observer.SequenceGap(h.DeviceID, l.expected, f.Seq)
		}
		l.expected = f.Seq
		l.durable = f.Seq - 1
	}
	l.mu.Unlock()
	if l.clk.haveRaw && int32(f.UptimeMillis-l.clk.lastRaw) < 0 {
		l.clk.reset() // the MCU rebooted
	}
	l.clk.anchor(now, l.clk.unwrap(f.UptimeMillis))
	if first {
		l.cfg.Logger.Info("bridge: mcu said hello", "device", h.DeviceID, "firmware", fmt.Sprintf("%d.%d.%d", h.Firmware[0], h.Firmware[1], h.Firmware[2]), "boot_epoch", h.BootEpoch, "next_seq", f.Seq)
		l.sendTimeSync()
	}
}

func seqLE(a, b uint32) bool { return int32(b-a) >= 0 }

func (l *link) deliverLoop(ctx context.Context, records <-chan Record) {
	for {
		var batch []Record
		select {
		case r := <-records:
			batch = append(make([]Record, 0, l.cfg.MaxBatch), r)
		case <-ctx.Done():
			return
		}
	drain:
		for len(batch) < l.cfg.MaxBatch {
			select {
			case r := <-records:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		if !l.deliver(ctx, batch) {
			return
		}
		last := batch[len(batch)-1].Seq
		l.mu.Lock()
		l.durable = last
		l.mu.Unlock()
		l.sendAck(last, false)
	}
}

// deliver hands batch to the sink until it succeeds; false means ctx ended.
func (l *link) deliver(ctx context.Context, batch []Record) bool {
	backoff := l.cfg.RetryMin
	dev := batch[0].Device
	for {
		start := time.Now()
		err := l.cfg.Sink.Deliver(ctx, batch)
		if err == nil {
			l.b.stats.delivered.Add(uint64(len(batch)))
			l.cfg.Observer.Delivered(dev, len(batch), time.Since(start))
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		l.b.stats.deliverErrors.Add(1)
		l.cfg.Observer.DeliverFailed(dev, err)
		l.cfg.Logger.Warn("bridge: sink failed, retrying", "device", dev, "first_seq", batch[0].Seq, "records", len(batch), "retry_in", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		backoff = min(2*backoff, l.cfg.RetryMax)
	}
}

// tickLoop asks for a Hello until one comes, then sends time syncs.
func (l *link) tickLoop(ctx context.Context) {
	period := min(l.cfg.HelloRetry, l.cfg.TimeSyncInterval)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		now := l.cfg.Now()
		l.mu.Lock()
		needHello := !l.haveHello && now.Sub(l.lastHelloRq) >= l.cfg.HelloRetry
		if needHello {
			l.lastHelloRq = now
			l.nextToken++
		}
		tok := l.nextToken
		needSync := l.haveHello && now.Sub(l.lastSync) >= l.cfg.TimeSyncInterval
		l.mu.Unlock()
		if needHello {
			l.send(frame.Ping{Token: tok, WantHello: true})
		}
		if needSync {
			l.sendTimeSync()
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}
