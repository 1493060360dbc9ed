//go:build !unix

package testkit

import (
	"os"
	"os/exec"
)

// setProcAttr leaves cmd as it is: no process groups here.
func setProcAttr(*exec.Cmd) {}

// killGroup kills p alone.
func killGroup(p *os.Process) { _ = p.Kill() }
