package bridge

import "errors"

// Errors of the bridge.
var (
	// ErrConfig is an invalid Config.
	ErrConfig = errors.New("invalid bridge config")
	// ErrLink is a failure of the link to the MCU (read or write).
	ErrLink = errors.New("mcu link failed")
)
