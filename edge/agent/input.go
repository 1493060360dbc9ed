package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bowline-iot/bowline/firmware-bridge/transport"
)

// Input kinds.
const (
	InputSerial = "serial" // a UART or pty: serial:/dev/ttyUSB0 or serial:/dev/pts/3@115200
	InputUnix   = "unix"   // dial a unix socket: unix:/run/bowl-1.sock
	InputListen = "listen" // accept bowls on a unix socket: listen:/run/bowls.sock
)

// Input is one source of MCU links.
type Input struct {
	Kind   string
	Path   string
	Serial transport.SerialConfig
}

func (in Input) String() string { return in.Kind + ":" + in.Path }

// ParseInput parses "serial:PATH[@BAUD]", "unix:PATH" or "listen:PATH".
func ParseInput(s string) (Input, error) {
	kind, path, ok := strings.Cut(s, ":")
	if !ok || path == "" {
		return Input{}, fmt.Errorf("input %q: want serial:PATH[@BAUD], unix:PATH or listen:PATH", s)
	}
	in := Input{Kind: kind, Path: path}
	switch kind {
	case InputSerial:
		if p, baud, ok := strings.Cut(path, "@"); ok {
			n, err := strconv.Atoi(baud)
			if err != nil || n <= 0 {
				return Input{}, fmt.Errorf("input %q: baud %q: want a positive number", s, baud)
			}
			in.Path, in.Serial.Baud = p, n
		}
		if err := in.Serial.Validate(); err != nil {
			return Input{}, fmt.Errorf("input %q: %w", s, err)
		}
	case InputUnix, InputListen:
	default:
		return Input{}, fmt.Errorf("input %q: kind %q: want serial, unix or listen", s, kind)
	}
	return in, nil
}

// runner is what serves one link (the bridge).
type runner interface {
	Run(ctx context.Context, conn io.ReadWriter) error
}

// linkState is one link's status.
type linkState struct {
	mu        sync.Mutex
	connected bool
	lastErr   string
}

func (l *linkState) set(connected bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.connected = connected
	if err != nil {
		l.lastErr = err.Error()
	}
}

// serve keeps in connected: it (re)opens the link and runs the bridge on
// it until ctx ends, waiting retry between attempts.
func serve(ctx context.Context, in Input, br runner, st *linkState, retry time.Duration, log func(msg string, args ...any)) {
	if in.Kind == InputListen {
		serveListener(ctx, in, br, st, log)
		return
	}
	for ctx.Err() == nil {
		conn, err := open(ctx, in)
		if err == nil {
			st.set(true, nil)
			err = br.Run(ctx, conn)
			_ = conn.Close()
		}
		st.set(false, err)
		// Said after the pause, and only if ctx still runs: when the
		// agent stops, the far end may see the stop first and close the
		// link before ctx's cancellation has reached this goroutine's
		// context, and that end is no news.
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		log("bowl link ended; reopening", "input", in.String(), "err", err, "after", retry)
	}
}

func open(ctx context.Context, in Input) (io.ReadWriteCloser, error) {
	switch in.Kind {
	case InputSerial:
		return transport.OpenSerial(in.Path, in.Serial)
	case InputUnix:
		return transport.DialUnix(ctx, in.Path)
	}
	return nil, fmt.Errorf("input %s: unknown kind", in)
}

func serveListener(ctx context.Context, in Input, br runner, st *linkState, log func(string, ...any)) {
	ln, err := transport.ListenUnix(in.Path)
	if err != nil {
		st.set(false, err)
		log("cannot listen for bowls", "input", in.String(), "err", err)
		return
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	st.set(true, nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				st.set(false, err)
				log("accept failed", "input", in.String(), "err", err)
			}
			return
		}
		wg.Go(func() {
			defer conn.Close()
			if err := br.Run(ctx, conn); err != nil && ctx.Err() == nil {
				log("bowl link ended", "input", in.String(), "err", err)
			}
		})
	}
}
