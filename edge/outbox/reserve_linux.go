package outbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// preallocate allocates n bytes of the file at path from off on, keeping
// its size. The blocks belong to the file, whichever descriptor asks.
func preallocate(path string, off, n int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
}

// allocateFile creates the file at path with n bytes allocated to it.
// A failure leaves no file behind.
func allocateFile(path string, n int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return err
	}
	return f.Close()
}
