package subscribers

import (
	"errors"
	"fmt"

	"github.com/bowline-iot/bowline/cloud/adapters"
	"github.com/bowline-iot/bowline/engine/worker"
)

// ErrBadPayload: an event's payload lacks a field the handler needs;
// retrying cannot fix it, so it is terminal.
var ErrBadPayload = errors.New("event payload unusable")

// classify maps an adapter error onto the worker's classes.
func classify(err error) error {
	if err == nil || adapters.IsRetryable(err) {
		return err
	}
	return worker.Terminal(err)
}

// badPayload is a terminal error naming the event and the problem.
func badPayload(typ, id, format string, args ...any) error {
	return worker.Terminal(fmt.Errorf("%s %s: %s: %w", typ, id, fmt.Sprintf(format, args...), ErrBadPayload))
}
