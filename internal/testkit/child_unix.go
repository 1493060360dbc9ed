//go:build unix

package testkit

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr puts the child in its own process group, so that the test
// can kill all it started, and on Linux asks the kernel to SIGKILL it
// when the test binary dies.
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setPdeathsig(cmd.SysProcAttr)
}

// killGroup sends SIGKILL to the process group p leads.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
