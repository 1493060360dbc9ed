package worker

import (
	"errors"
	"fmt"
)

// Sentinel errors of the worker.
var (
	// ErrTerminal marks a handler error that retrying cannot fix: the
	// subscription goes dead at once instead of waiting for more receives.
	ErrTerminal = errors.New("terminal handler error")
	// ErrPanic marks a handler that panicked; it is retryable.
	ErrPanic = errors.New("handler panicked")
	// ErrLeaseTooLong: the lease is not shorter than the queue's
	// visibility timeout.
	ErrLeaseTooLong = errors.New("lease not shorter than the queue visibility timeout")
	// ErrRunTimeExceeded is the cause of a handler context cancelled at
	// Config.MaxRunTime, and wraps the error of such a run; it is
	// retryable.
	ErrRunTimeExceeded = errors.New("handler exceeded its maximum run time")
	// ErrNotChained marks a message body that decodes to an envelope but
	// is not a chained event row (decodeChained): it is refused like a
	// poison pill and never handled.
	ErrNotChained = errors.New("not a chained event row")
	// ErrRetryPastHold: the attempt budget could outlast what SQS lets one
	// receive hold a message (MaxHold), given the retry spacing.
	ErrRetryPastHold = errors.New("attempt budget may outlast half of the 12-hour hold limit")
)

// Terminal wraps err so the worker dead-letters the subscription without
// further retries: errors.Is(Terminal(err), ErrTerminal) is true.
func Terminal(err error) error {
	if err == nil {
		err = errors.New("unspecified")
	}
	return &terminalError{err}
}

type terminalError struct{ err error }

func (e *terminalError) Error() string   { return fmt.Sprintf("terminal: %v", e.err) }
func (e *terminalError) Unwrap() []error { return []error{ErrTerminal, e.err} }
