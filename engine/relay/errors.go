package relay

import (
	"errors"
	"fmt"
)

// Sentinel errors of the relay.
var (
	// ErrBadPath marks a JSON path outside the "$" / "$.a.b" form.
	ErrBadPath = errors.New("json path must be $ or $.name(.name)*")
	// ErrBadFilter marks a filter pattern this relay cannot evaluate.
	ErrBadFilter = errors.New("unsupported filter pattern")
	// ErrUnresolved marks a transform path that does not resolve to a
	// usable value in a record.
	ErrUnresolved = errors.New("path does not resolve")
	// ErrNoStream marks a source table without a stream.
	ErrNoStream = errors.New("table has no stream")
)

// TransformError says which record and which path failed to transform.
type TransformError struct {
	Pipe     string
	EventID  string // the stream record's eventID
	Path     string
	Problem  string
	Sequence string
}

func (e *TransformError) Error() string {
	return fmt.Sprintf("pipe %q record %s (seq %s): %s %s", e.Pipe, e.EventID, e.Sequence, e.Path, e.Problem)
}

func (e *TransformError) Unwrap() error { return ErrUnresolved }
