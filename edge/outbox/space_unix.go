//go:build unix

package outbox

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// fsFree returns the bytes available on the file system holding path, or
// -1 when statfs fails or reports no size at all (a FUSE file system that
// does not implement statfs reports zero blocks, which is not a full disk).
func fsFree(path string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil || st.Blocks == 0 {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize) //nolint:unconvert // Bsize is not int64 everywhere
}
