package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// MCUConfig configures the model of the bowl's microcontroller.
type MCUConfig struct {
	// DeviceID is announced in Hello. Required.
	DeviceID string
	// Firmware is the version in Hello; default 1.0.0.
	Firmware [3]uint8
	// RingSize is how many unacknowledged frames the MCU keeps; default 64.
	// It is also the send window: a full ring stops new frames.
	RingSize int
	// RetransmitTimeout: when frames are in flight and no acknowledgement
	// advanced for this long, the MCU retransmits the whole ring from the
	// oldest frame (go-back-N). Default 250ms. It is wall-clock time on the
	// link, whatever the simulation speed.
	RetransmitTimeout time.Duration
	// SampleRateHz is the load cell rate announced in Hello; default 50.
	SampleRateHz uint16
	// FirstSeq is the sequence number of the first frame; default 0. Tests
	// start near 2^32 to cross the wrap.
	FirstSeq uint32
	// BootEpoch is announced in Hello (PROTOCOL.md, "Boot epoch"): it names
	// this MCU's counter. Default 0: a firmware that sends no epoch. A new
	// MCU with the same DeviceID, a FirstSeq back at the start and another
	// BootEpoch models a board swap or a flash erase.
	BootEpoch uint32
	// Uptime is the device clock in milliseconds; default: wall time since
	// NewMCU. Hello and Pong frames are stamped with it.
	Uptime func() uint32
	// OnCommand receives Tare and SetRate from the gateway. It is called
	// from the link reader and must not block. Optional.
	OnCommand func(frame.Body)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c MCUConfig) withDefaults() MCUConfig {
	if c.Firmware == ([3]uint8{}) {
		c.Firmware = [3]uint8{1, 0, 0}
	}
	if c.RingSize == 0 {
		c.RingSize = 64
	}
	if c.RetransmitTimeout == 0 {
		c.RetransmitTimeout = 250 * time.Millisecond
	}
	if c.SampleRateHz == 0 {
		c.SampleRateHz = 50
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate checks the config after defaults are applied.
func (c MCUConfig) Validate() error {
	c = c.withDefaults()
	if _, err := frame.Marshal(frame.Frame{Body: frame.Hello{DeviceID: c.DeviceID, SampleRateHz: c.SampleRateHz}}); err != nil {
		return fmt.Errorf("mcu config: %w", err)
	}
	if c.RingSize < 1 || c.RingSize > 65535 {
		return fmt.Errorf("mcu config: ring size %d outside 1..65535: %w", c.RingSize, ErrConfig)
	}
	if c.RetransmitTimeout < 0 {
		return fmt.Errorf("mcu config: negative retransmit timeout: %w", ErrConfig)
	}
	return nil
}

// MCUStats is what the MCU model has done; all counts are frames.
type MCUStats struct {
	Accepted      uint64 `json:"accepted"`      // readings that got a sequence number and entered the ring
	Refused       uint64 `json:"refused"`       // readings refused because the ring was full (backpressure)
	Transmitted   uint64 `json:"transmitted"`   // sequenced frames written, retransmissions included
	Retransmitted uint64 `json:"retransmitted"` // of which retransmissions
	Timeouts      uint64 `json:"timeouts"`      // retransmit timeouts that rewound the ring
	Resends       uint64 `json:"resends"`       // resend requests from the gateway that rewound the ring
	Freed         uint64 `json:"freed"`         // frames freed by cumulative acks
	RingLen       int    `json:"ring_len"`      // frames in the ring now
	// AckedThrough is the last cumulative ack that freed frames; valid when
	// Freed > 0.
	AckedThrough uint32 `json:"acked_through"`
}

type ringEntry struct {
	seq  uint32
	wire []byte
}

// MCU models the bowl firmware's link layer: every reading becomes a
// sequenced frame in a ring of unacknowledged frames; frames are sent in
// order, a cumulative ack frees them, a resend request or a retransmit
// timeout sends them again from the oldest (go-back-N).
//
// A full ring applies backpressure: Offer refuses the new reading (it gets
// no sequence number, so the gateway never sees a hole it cannot fill) and
// counts it in MCUStats.Refused; once space frees, the MCU sends a
// FaultRingOverflow frame whose detail is the number refused since the last
// report. It never drops a frame it has numbered. Push waits for space.
//
// The ring survives Run returning, as RAM survives a gateway restart: call
// Run again with a new link and the MCU says hello and carries on.
type MCU struct {
	cfg   MCUConfig
	start time.Time

	mu          sync.Mutex
	ring        []ringEntry
	next        uint32
	sendIdx     int
	deadline    time.Time // retransmit when in-flight frames see no progress by then
	wantHello   bool
	pongs       []uint32
	unreported  uint64 // refused readings not yet reported in a fault frame
	sentAny     bool
	highestSent uint32
	stats       MCUStats
	wake        chan struct{}
	space       chan struct{}
}

// NewMCU returns an MCU model with an empty ring.
func NewMCU(cfg MCUConfig) (*MCU, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &MCU{cfg: cfg.withDefaults(), start: time.Now(), wake: make(chan struct{}, 1), space: make(chan struct{}, 1)}
	m.next = m.cfg.FirstSeq
	if m.cfg.Uptime == nil {
		m.cfg.Uptime = func() uint32 { return uint32(time.Since(m.start).Milliseconds()) }
	}
	return m, nil
}

// DeviceID is the id this MCU announces.
func (m *MCU) DeviceID() string { return m.cfg.DeviceID }

// Stats returns a snapshot of the counters.
func (m *MCU) Stats() MCUStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.RingLen = len(m.ring)
	return s
}

// NextSeq is the sequence number the next accepted reading will get.
func (m *MCU) NextSeq() uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Offer puts a reading taken at uptimeMillis into the ring and reports
// whether it was accepted; a full ring refuses it (see MCU).
func (m *MCU) Offer(uptimeMillis uint32, body frame.Body) (bool, error) {
	if !body.Type().Sequenced() {
		return false, fmt.Errorf("offer %s: %w", body.Type(), ErrNotData)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ring) >= m.cfg.RingSize {
		m.stats.Refused++
		m.unreported++
		return false, nil
	}
	if m.unreported > 0 && len(m.ring) < m.cfg.RingSize-1 {
		detail := strconv.FormatUint(m.unreported, 10) + " readings refused: ring full"
		if err := m.enqueue(uptimeMillis, frame.Fault{Code: frame.FaultRingOverflow, Detail: detail}); err != nil {
			return false, err
		}
		m.unreported = 0
	}
	if err := m.enqueue(uptimeMillis, body); err != nil {
		return false, err
	}
	return true, nil
}

// Push is Offer that waits for ring space instead of refusing.
func (m *MCU) Push(ctx context.Context, uptimeMillis uint32, body frame.Body) error {
	for {
		m.mu.Lock()
		full := len(m.ring) >= m.cfg.RingSize
		m.mu.Unlock()
		if !full {
			ok, err := m.Offer(uptimeMillis, body)
			if err != nil || ok {
				return err
			}
		}
		select {
		case <-m.space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// enqueue numbers body and appends it to the ring; m.mu is held.
func (m *MCU) enqueue(uptimeMillis uint32, body frame.Body) error {
	w, err := frame.Encode(frame.Frame{Seq: m.next, UptimeMillis: uptimeMillis, Body: body})
	if err != nil {
		return fmt.Errorf("encode %s reading: %w", body.Type(), err)
	}
	m.ring = append(m.ring, ringEntry{seq: m.next, wire: w})
	m.next++
	m.stats.Accepted++
	signal(m.wake)
	return nil
}

// seqLE reports a <= b in 32-bit serial-number arithmetic (RFC 1982).
func seqLE(a, b uint32) bool { return int32(b-a) >= 0 }

// Run speaks the protocol over link until ctx ends or the link fails. It
// starts with a delimiter and a Hello (link up), then sends ring frames,
// answers pings and time syncs, and applies acks. The error is ctx.Err()
// or the link's error. Run closes link if it is an io.Closer when ctx ends,
// to unblock its reader.
func (m *MCU) Run(ctx context.Context, link io.ReadWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.mu.Lock()
	m.wantHello, m.sendIdx, m.deadline = true, 0, time.Time{}
	m.mu.Unlock()

	readErr := make(chan error, 1)
	go func() { readErr <- m.readLoop(link) }()
	stop := context.AfterFunc(ctx, func() {
		if c, ok := link.(io.Closer); ok {
			c.Close()
		}
	})
	defer stop()

	if _, err := link.Write([]byte{0}); err != nil {
		return fmt.Errorf("mcu %s: write: %w", m.cfg.DeviceID, err)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		out, wait := m.nextToSend()
		if out != nil {
			if _, err := link.Write(out); err != nil {
				cancel()
				return fmt.Errorf("mcu %s: write: %w", m.cfg.DeviceID, err)
			}
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-m.wake:
		case <-timer.C:
		case err := <-readErr:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("mcu %s: read: %w", m.cfg.DeviceID, err)
		case <-ctx.Done():
			return ctx.Err()
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// nextToSend picks the next frame to write, or how long to wait (0: until
// woken).
func (m *MCU) nextToSend() ([]byte, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	switch {
	case m.wantHello:
		m.wantHello = false
		oldest := m.next
		if len(m.ring) > 0 {
			oldest = m.ring[0].seq
		}
		return m.control(oldest, frame.Hello{DeviceID: m.cfg.DeviceID, Firmware: m.cfg.Firmware,
			Capabilities: frame.CapWeight | frame.CapTemperature | frame.CapBattery | frame.CapRFID | frame.CapLid,
			RingSize:     uint16(m.cfg.RingSize), SampleRateHz: m.cfg.SampleRateHz, BootEpoch: m.cfg.BootEpoch}), 0
	case len(m.pongs) > 0:
		tok := m.pongs[0]
		m.pongs = m.pongs[1:]
		return m.control(m.next, frame.Pong{Token: tok}), 0
	case m.sendIdx < len(m.ring):
		e := m.ring[m.sendIdx]
		m.sendIdx++
		m.stats.Transmitted++
		if m.sentAny && seqLE(e.seq, m.highestSent) {
			m.stats.Retransmitted++
		} else {
			m.sentAny, m.highestSent = true, e.seq
		}
		m.deadline = now.Add(m.cfg.RetransmitTimeout)
		return e.wire, 0
	case len(m.ring) > 0 && m.cfg.RetransmitTimeout > 0:
		if now.Before(m.deadline) {
			return nil, m.deadline.Sub(now)
		}
		m.stats.Timeouts++
		m.sendIdx = 0
		m.deadline = now.Add(m.cfg.RetransmitTimeout)
		signal(m.wake)
		return nil, 0
	}
	return nil, 0
}

// control encodes an unsequenced frame stamped with the uptime.
func (m *MCU) control(seq uint32, body frame.Body) []byte {
	w, err := frame.Encode(frame.Frame{Seq: seq, UptimeMillis: m.cfg.Uptime(), Body: body})
	if err != nil {
		m.cfg.Logger.Error("mcu encode control frame", "device", m.cfg.DeviceID, "type", body.Type(), "err", err)
		return []byte{0}
	}
	return w
}

func (m *MCU) readLoop(link io.Reader) error {
	d := frame.NewDecoder(link)
	for {
		f, err := d.Next()
		if err != nil {
			return err
		}
		m.handle(f)
	}
}

func (m *MCU) handle(f frame.Frame) {
	switch b := f.Body.(type) {
	case frame.Ack:
		m.ack(b)
	case frame.Ping:
		m.mu.Lock()
		if b.WantHello {
			m.wantHello = true
		}
		m.pongs = append(m.pongs, b.Token)
		m.mu.Unlock()
		signal(m.wake)
	case frame.TimeSync:
		m.mu.Lock()
		m.pongs = append(m.pongs, b.Token)
		m.mu.Unlock()
		signal(m.wake)
	case frame.Tare, frame.SetRate:
		if m.cfg.OnCommand != nil {
			m.cfg.OnCommand(b)
		}
	default:
		m.cfg.Logger.Debug("mcu ignores frame", "device", m.cfg.DeviceID, "type", f.Type())
	}
}

// ack frees the ring up to a.Cumulative and rewinds on a resend request.
// An ack outside [oldest-1, newest] is stale or bogus and ignored.
func (m *MCU) ack(a frame.Ack) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ring) == 0 {
		return
	}
	oldest := m.ring[0].seq
	if !seqLE(oldest-1, a.Cumulative) || !seqLE(a.Cumulative, m.next-1) {
		return
	}
	k := int(a.Cumulative - (oldest - 1))
	if k > 0 {
		m.ring = append(m.ring[:0], m.ring[k:]...)
		m.sendIdx = max(0, m.sendIdx-k)
		m.stats.Freed += uint64(k)
		m.stats.AckedThrough = a.Cumulative
		m.deadline = time.Now().Add(m.cfg.RetransmitTimeout)
		signal(m.space)
	}
	if a.Resend && m.sendIdx > 0 {
		m.sendIdx = 0
		m.stats.Resends++
	}
	signal(m.wake)
}
