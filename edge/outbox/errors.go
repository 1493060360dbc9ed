package outbox

import "errors"

// Errors returned by the outbox.
var (
	// ErrFull means the append would exceed the disk cap and only events are
	// left to make room; nothing was written.
	ErrFull = errors.New("outbox full")
	// ErrCorrupt means the file failed bbolt's consistency check or could
	// not be opened as a bbolt file; see Recover.
	ErrCorrupt = errors.New("outbox file is corrupt")
	// ErrFormat means a record or the file carries an unknown format version.
	ErrFormat = errors.New("unknown outbox format")
	// ErrLocked means another process holds the file.
	ErrLocked = errors.New("outbox file is locked by another process")
	// ErrClosed means the outbox was closed.
	ErrClosed = errors.New("outbox closed")
	// ErrInvalid means an entry handed to Append is malformed.
	ErrInvalid = errors.New("invalid entry")
	// ErrOtherOutbox means an acknowledgement names another outbox
	// instance (a file since recreated, or a forgery); nothing was removed.
	ErrOtherOutbox = errors.New("acknowledgement for another outbox")
)
