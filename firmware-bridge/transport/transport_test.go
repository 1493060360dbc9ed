package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

func TestSerialConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg SerialConfig
		ok  bool
	}{
		{SerialConfig{}, true},
		{SerialConfig{Baud: 9600, DataBits: 7, Parity: "even", StopBits: 2}, true},
		{SerialConfig{Baud: 10}, false},
		{SerialConfig{DataBits: 9}, false},
		{SerialConfig{Parity: "mark"}, false},
		{SerialConfig{StopBits: 3}, false},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrConfig)) {
			t.Errorf("Validate(%+v) = %v; want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}

// TestSerialOverPTY opens the pty's tty with the serial driver and checks
// that every byte value passes both ways untouched (raw mode: no echo, no
// CR/LF mapping, no flow-control bytes eaten).
func TestSerialOverPTY(t *testing.T) {
	p, err := OpenPTY()
	if err != nil {
		t.Fatalf("OpenPTY: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	s, err := OpenSerial(p.Path, SerialConfig{})
	if err != nil {
		t.Fatalf("OpenSerial(%s): %v", p.Path, err)
	}
	t.Cleanup(func() { s.Close() })
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	check := func(name string, w io.Writer, r io.Reader) {
		t.Helper()
		if _, err := w.Write(all); err != nil {
			t.Fatalf("%s write: %v", name, err)
		}
		got := make([]byte, len(all))
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("%s read: %v", name, err)
		}
		if !bytes.Equal(got, all) {
			t.Fatalf("%s bytes = % x; want 00..ff", name, got)
		}
	}
	check("master to serial", p.Master, s)
	check("serial to master", s, p.Master)
}

func TestUnixSocketReplacesStaleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bowl.sock")
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(path); err == nil {
		t.Fatalf("second ListenUnix(%s) while listening = nil; want an error", path)
	}
	l.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	l.Close()
	l, err = ListenUnix(path)
	if err != nil {
		t.Fatalf("ListenUnix over a stale socket: %v", err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := DialUnix(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := io.ReadAll(c)
	if string(b) != "hi" {
		t.Fatalf("read %q; want %q", b, "hi")
	}
}
