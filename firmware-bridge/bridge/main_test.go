package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/bowline-iot/bowline/firmware-bridge/bridge"
	"github.com/bowline-iot/bowline/firmware-bridge/frame"
	"github.com/bowline-iot/bowline/firmware-bridge/transport"
)

// Environment of the re-executed test binary that plays the gateway.
const (
	envHelper     = "BOWLINE_BRIDGE_HELPER" // "1": run helperMain instead of the tests
	envTTY        = "BOWLINE_BRIDGE_TTY"    // tty to open
	envOut        = "BOWLINE_BRIDGE_OUT"    // JSON-lines file the sink appends to
	envRun        = "BOWLINE_BRIDGE_RUN"    // run number written on each line
	envStallAfter = "BOWLINE_BRIDGE_STALL"  // stop confirming after this many records (0: never)
)

func TestMain(m *testing.M) {
	if os.Getenv(envHelper) == "1" {
		helperMain()
		return
	}
	os.Exit(m.Run())
}

// sinkLine is one delivered record as the helper's file sink writes it.
type sinkLine struct {
	Run    int         `json:"run"`
	Device string      `json:"device"`
	Frame  frame.Frame `json:"frame"`
}

// fileSink appends every delivered record to a file and fsyncs before
// confirming. It does not deduplicate, so the test sees exactly what the
// bridge delivered. After stallAfter records it writes the batch, fsyncs,
// and then never returns: the sink "stops confirming" with the batch
// durable but unacknowledged.
type fileSink struct {
	f          *os.File
	w          *bufio.Writer
	run        int
	n          int
	stallAfter int
}

func (s *fileSink) Deliver(ctx context.Context, batch []bridge.Record) error {
	for _, r := range batch {
		b, err := json.Marshal(sinkLine{Run: s.run, Device: r.Device, Frame: frame.Frame{Seq: r.Seq, Body: r.Body}})
		if err != nil {
			return fmt.Errorf("encode record %d: %w", r.Seq, err)
		}
		s.w.Write(append(b, '\n'))
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", s.f.Name(), err)
	}
	s.n += len(batch)
	if s.stallAfter > 0 && s.n >= s.stallAfter {
		<-ctx.Done() // durable, never confirmed
		return ctx.Err()
	}
	return nil
}

// helperMain is the gateway process of TestGatewayRestart: a bridge on a
// tty with a file sink. It runs until killed.
func helperMain() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fail := func(err error) {
		log.Error("helper", "err", err)
		os.Exit(1)
	}
	run, _ := strconv.Atoi(os.Getenv(envRun))
	stall, _ := strconv.Atoi(os.Getenv(envStallAfter))
	f, err := os.OpenFile(os.Getenv(envOut), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fail(err)
	}
	port, err := transport.OpenSerial(os.Getenv(envTTY), transport.SerialConfig{})
	if err != nil {
		fail(err)
	}
	br, err := bridge.New(bridge.Config{Sink: &fileSink{f: f, w: bufio.NewWriter(f), run: run, stallAfter: stall}, Logger: log})
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fmt.Println("ready")
	err = br.Run(ctx, port)
	log.Info("helper exits", "err", err)
}
