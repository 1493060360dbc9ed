//go:build unix && !linux

package testkit

import "syscall"

// setPdeathsig does nothing: only Linux has a parent-death signal, so
// elsewhere a child outlives a test binary that is killed.
func setPdeathsig(*syscall.SysProcAttr) {}
