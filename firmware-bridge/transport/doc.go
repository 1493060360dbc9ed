// Package transport opens the byte links the bowl protocol runs over: a
// real serial port (UART) with baud and framing settings, a pseudo-terminal
// pair (a real tty, for the simulator and tests), and Unix sockets.
//
// Every link is an io.ReadWriteCloser; Close unblocks a pending Read, which
// is how the bridge stops.
//
// # Caveats
//
// Serial ports are opened in exclusive mode (TIOCEXCL). A process killed
// while holding one leaves that mode set for as long as another descriptor
// of the tty stays open; PTY.ReleaseExclusive clears it for the pty case.
package transport
