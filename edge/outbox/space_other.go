//go:build !unix

package outbox

// fsFree reports the free space as unknown: the disk budget then applies
// MaxBytes alone.
func fsFree(string) int64 { return -1 }
