package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
)

// ListenUnix listens on a Unix stream socket at path, replacing a stale
// socket file left by a dead process (but never a file of another kind).
func ListenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("listen unix %s: %w: exists and is not a socket", path, ErrConfig)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen unix %s: %w: another process is listening", path, ErrConfig)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("listen unix %s: remove stale socket: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listen unix %s: %w", path, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen unix %s: %w", path, err)
	}
	return l, nil
}

// DialUnix connects to the Unix stream socket at path.
func DialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dial unix %s: %w", path, err)
	}
	return c, nil
}
