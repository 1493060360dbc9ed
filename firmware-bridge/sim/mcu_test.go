package sim

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
)

// gateway is the test's side of a net.Pipe to an MCU.
type gateway struct {
	t      *testing.T
	conn   net.Conn
	frames chan frame.Frame
}

func startMCU(t *testing.T, cfg MCUConfig) (*MCU, *gateway) {
	t.Helper()
	m, err := NewMCU(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx, a); close(done) }()
	g := &gateway{t: t, conn: b, frames: make(chan frame.Frame, 1024)}
	go func() {
		d := frame.NewDecoder(b)
		for {
			f, err := d.Next()
			if err != nil {
				close(g.frames)
				return
			}
			g.frames <- f
		}
	}()
	t.Cleanup(func() { cancel(); b.Close(); <-done })
	return m, g
}

func (g *gateway) next(skipHello bool) frame.Frame {
	g.t.Helper()
	for {
		select {
		case f, ok := <-g.frames:
			if !ok {
				g.t.Fatal("link closed")
			}
			if skipHello && (f.Type() == frame.TypeHello || f.Type() == frame.TypePong) {
				continue
			}
			return f
		case <-time.After(time.Minute): // hang guard
			g.t.Fatal("no frame from the MCU")
		}
	}
}

func (g *gateway) send(b frame.Body) {
	g.t.Helper()
	w, err := frame.Encode(frame.Frame{Body: b})
	if err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.conn.Write(w); err != nil && err != io.ErrClosedPipe {
		g.t.Fatal(err)
	}
}

func temp(c int16) frame.Body { return frame.Temperature{CentiCelsius: c} }

func TestMCUHelloCarriesOldestUnacked(t *testing.T) {
	m, g := startMCU(t, MCUConfig{DeviceID: "b1", FirstSeq: 100, RetransmitTimeout: time.Hour})
	if f := g.next(false); f.Type() != frame.TypeHello || f.Seq != 100 {
		t.Fatalf("first frame = %s seq %d; want hello seq 100", f.Type(), f.Seq)
	}
	for i := 0; i < 3; i++ {
		if ok, err := m.Offer(0, temp(int16(i))); !ok || err != nil {
			t.Fatalf("Offer(%d) = %v, %v", i, ok, err)
		}
	}
	for i := 0; i < 3; i++ {
		if f := g.next(true); f.Seq != 100+uint32(i) {
			t.Fatalf("frame %d seq %d; want %d", i, f.Seq, 100+i)
		}
	}
	g.send(frame.Ack{Cumulative: 100})
	g.send(frame.Ping{Token: 9, WantHello: true})
	if f := g.next(false); f.Type() != frame.TypeHello || f.Seq != 101 {
		t.Fatalf("hello after ack of 100 = %s seq %d; want hello seq 101", f.Type(), f.Seq)
	}
	if f := g.next(false); f.Body != (frame.Pong{Token: 9}) {
		t.Fatalf("answer to ping = %+v; want pong 9", f.Body)
	}
}

// TestMCUBackpressureAndOverflowReport: a full ring refuses readings,
// counts them, and reports them in a FaultRingOverflow frame once an ack
// frees space; an ack outside the window is ignored; a resend request
// rewinds to the oldest unacked frame.
func TestMCUBackpressureAndOverflowReport(t *testing.T) {
	m, g := startMCU(t, MCUConfig{DeviceID: "b1", RingSize: 4, RetransmitTimeout: time.Hour})
	for i := 0; i < 6; i++ {
		ok, err := m.Offer(0, temp(int16(i)))
		if err != nil || ok != (i < 4) {
			t.Fatalf("Offer(%d) = %v, %v; want accepted=%v", i, ok, err, i < 4)
		}
	}
	if s := m.Stats(); s.Refused != 2 || s.RingLen != 4 {
		t.Fatalf("stats %+v; want 2 refused, 4 in ring", s)
	}
	for i := 0; i < 4; i++ {
		g.next(true)
	}
	g.send(frame.Ack{Cumulative: 1000}) // beyond anything sent: ignored
	g.send(frame.Ack{Cumulative: 1, Resend: true})
	for _, want := range []uint32{2, 3} {
		if f := g.next(true); f.Seq != want {
			t.Fatalf("after resend from 2: seq %d; want %d", f.Seq, want)
		}
	}
	if ok, _ := m.Offer(0, temp(99)); !ok {
		t.Fatal("Offer after ack refused; want accepted")
	}
	f := g.next(true)
	if fault, ok := f.Body.(frame.Fault); !ok || fault.Code != frame.FaultRingOverflow || fault.Detail != "2 readings refused: ring full" || f.Seq != 4 {
		t.Fatalf("frame after space freed = seq %d %+v; want seq 4 overflow fault for 2 readings", f.Seq, f.Body)
	}
	if f := g.next(true); f.Seq != 5 || f.Body != temp(99) {
		t.Fatalf("then seq %d %+v; want seq 5 the new reading", f.Seq, f.Body)
	}
	if s := m.Stats(); s.Freed != 2 || s.Resends != 1 || s.AckedThrough != 1 {
		t.Fatalf("stats %+v; want 2 freed, 1 resend, acked through 1", s)
	}
}

func TestMCURetransmitsOnTimeout(t *testing.T) {
	m, g := startMCU(t, MCUConfig{DeviceID: "b1", RetransmitTimeout: 10 * time.Millisecond})
	m.Offer(0, temp(1))
	first := g.next(true)
	again := g.next(true) // no ack: the same frame comes again
	if first.Seq != 0 || again.Seq != 0 {
		t.Fatalf("seqs %d, %d; want 0 then its retransmission", first.Seq, again.Seq)
	}
	g.send(frame.Ack{Cumulative: 0})
	deadline := time.Now().Add(time.Minute)
	for m.Stats().RingLen != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if s := m.Stats(); s.Retransmitted == 0 || s.Timeouts == 0 || s.RingLen != 0 {
		t.Fatalf("stats %+v; want retransmissions after timeouts, then an empty ring", s)
	}
}

func TestMCUCommands(t *testing.T) {
	got := make(chan frame.Body, 2)
	_, g := startMCU(t, MCUConfig{DeviceID: "b1", OnCommand: func(b frame.Body) { got <- b }})
	g.send(frame.Tare{})
	g.send(frame.SetRate{RateHz: 10})
	for _, want := range []frame.Body{frame.Tare{}, frame.SetRate{RateHz: 10}} {
		select {
		case b := <-got:
			if b != want {
				t.Fatalf("command %+v; want %+v", b, want)
			}
		case <-time.After(time.Minute):
			t.Fatal("command not delivered")
		}
	}
}
