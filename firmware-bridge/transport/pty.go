//go:build linux

package transport

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// PTY is a pseudo-terminal pair in raw mode: bytes written to Master are
// read from the tty at Path (and from Slave), and the other way round, with
// no echo and no line editing. The simulator plays the MCU on Master; the
// bridge opens Path like any serial port.
type PTY struct {
	Master *os.File
	Slave  *os.File
	Path   string
}

// OpenPTY opens a pty pair and puts its tty into raw mode.
func OpenPTY() (*PTY, error) {
	m, s, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	p := &PTY{Master: m, Slave: s, Path: s.Name()}
	if err := makeRaw(int(s.Fd())); err != nil {
		p.Close()
		return nil, fmt.Errorf("raw mode on %s: %w", p.Path, err)
	}
	return p, nil
}

// makeRaw is cfmakeraw(3): 8 bits, no echo, no signals, no CR/LF mapping.
func makeRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

// ReleaseExclusive clears the tty's exclusive mode, which a killed process
// that opened Path with OpenSerial leaves behind, so the next one can open it.
func (p *PTY) ReleaseExclusive() error {
	if err := unix.IoctlSetInt(int(p.Slave.Fd()), unix.TIOCNXCL, 0); err != nil {
		return fmt.Errorf("release exclusive mode of %s: %w", p.Path, err)
	}
	return nil
}

// Close closes both ends.
func (p *PTY) Close() error {
	err1 := p.Master.Close()
	err2 := p.Slave.Close()
	if err1 != nil {
		return err1
	}
	return err2
}
