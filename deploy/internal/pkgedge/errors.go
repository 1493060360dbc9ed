package pkgedge

import "errors"

// Sentinel errors of the package.
var (
	// ErrArch marks an unsupported architecture.
	ErrArch = errors.New("unsupported architecture")
	// ErrBuild marks a failed cross-compile of bowline-edge.
	ErrBuild = errors.New("build bowline-edge")
)
