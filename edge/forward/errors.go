package forward

import "errors"

// Errors returned by the forwarder.
var (
	// ErrConnect wraps a failed connection attempt (refused, TLS, timeout).
	ErrConnect = errors.New("mqtt connect failed")
	// ErrConnectionLost means the connection dropped during a session.
	ErrConnectionLost = errors.New("mqtt connection lost")
	// ErrPubackTimeout means a publish got no PUBACK within PubackTimeout;
	// the session ends and everything not PUBACKed is sent again.
	ErrPubackTimeout = errors.New("no puback in time")
	// ErrTooLarge means a single record does not fit in MaxPayload.
	ErrTooLarge = errors.New("record larger than max payload")
)
