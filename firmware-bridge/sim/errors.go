package sim

import "errors"

// Errors of the simulator.
var (
	// ErrConfig is an invalid MCUConfig or Config.
	ErrConfig = errors.New("invalid simulator config")
	// ErrNotData is an Offer of a body that is not a sequenced data type.
	ErrNotData = errors.New("not a data frame type")
)
