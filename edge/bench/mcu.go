package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/sim"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
)

// mcuRing is the simulated firmware's ring of unacknowledged frames; it is
// also its send window.
const mcuRing = 128

// mcuSource is the agent's input: one simulated bowl MCU per bowl, each
// serving a unix socket the agent dials (input unix:PATH). The MCU keeps
// unacknowledged frames across agent restarts, as firmware RAM does.
type mcuSource struct {
	logs   []*bowlLog
	mcus   []*sim.MCU
	socks  []string
	seqs   [][]uint32 // per bowl: frame number -> MCU sequence number
	uptime []uint32   // per bowl: the uptime stamped on the last frame (ms)
	mu     sync.Mutex
	start  time.Time // the MCUs' boot: uptime 0
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newMCUSource(dir string, bowls int) (*mcuSource, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &mcuSource{logs: newBowlLogs(bowls), seqs: make([][]uint32, bowls), uptime: make([]uint32, bowls), start: time.Now(), cancel: cancel}
	for i := range bowls {
		mcu, err := sim.NewMCU(sim.MCUConfig{DeviceID: s.logs[i].Thing, RingSize: mcuRing, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("bowl %d: %w", i, err)
		}
		sock := filepath.Join(dir, fmt.Sprintf("b%d.sock", i))
		ln, err := transport.ListenUnix(sock)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("bowl %d: listen %s: %w", i, sock, err)
		}
		context.AfterFunc(ctx, func() { ln.Close() })
		s.mcus = append(s.mcus, mcu)
		s.socks = append(s.socks, sock)
		s.wg.Go(func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				_ = mcu.Run(ctx, conn) // returns when the agent dies
				conn.Close()
			}
		})
	}
	return s, nil
}

// Inputs are the agent's --input values.
func (s *mcuSource) Inputs() []string {
	var in []string
	for _, p := range s.socks {
		in = append(in, "unix:"+p)
	}
	return in
}

func (s *mcuSource) Push(ctx context.Context, b int, mg []int32) error {
	mcu := s.mcus[b]
	seq := mcu.NextSeq() // one pusher per bowl: Push gives this frame this number
	at := time.Now()
	// A frame is stamped with the uptime of its first sample: the real
	// time since boot, but never less than 20 ms per sample after the last
	// frame. At full speed the readings thus keep their 50 Hz spacing, as
	// a backlog the firmware measured earlier would; the detector's time
	// windows see a realistic signal.
	up := max(uint32(at.Sub(s.start).Milliseconds()), s.uptime[b])
	s.uptime[b] = up + uint32(len(mg))*20
	if err := mcu.Push(ctx, up, frame.WeightBatch{RateHz: 50, Milligrams: mg}); err != nil {
		return fmt.Errorf("bowl %d: push: %w", b, err)
	}
	s.logs[b].add(mg, at)
	s.mu.Lock()
	s.seqs[b] = append(s.seqs[b], seq)
	s.mu.Unlock()
	return nil
}

func (s *mcuSource) Pending() int {
	n := 0
	for _, m := range s.mcus {
		n += m.Stats().RingLen
	}
	return n
}

// Logs marks the frames at or below each MCU's cumulative ack as acked.
// Sequence numbers start at 0 and stay far from the 32-bit wrap here.
func (s *mcuSource) Logs() []*bowlLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	for b, m := range s.mcus {
		st := m.Stats()
		if st.Freed == 0 {
			continue
		}
		for i, seq := range s.seqs[b] {
			if seq <= st.AckedThrough {
				s.logs[b].setAcked(i)
			}
		}
	}
	return s.logs
}

// Close stops the MCUs and their listeners.
func (s *mcuSource) Close() {
	s.cancel()
	s.wg.Wait()
}
