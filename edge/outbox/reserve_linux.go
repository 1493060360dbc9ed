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
