//go:build !linux

package outbox

import "errors"

// preallocate is not available: the budget has no reserve in the file.
func preallocate(string, int64, int64) error {
	return errors.New("fallocate: not on this platform")
}

// allocateFile is not available: the outbox keeps no ballast.
func allocateFile(string, int64) error {
	return errors.New("fallocate: not on this platform")
}
