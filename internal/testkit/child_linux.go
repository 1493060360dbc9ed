package testkit

import "syscall"

// setPdeathsig asks Linux to SIGKILL the child when the thread that
// started it (in practice the test binary) dies.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
