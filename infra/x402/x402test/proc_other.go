//go:build !unix

package x402test

import (
	"os"
	"os/exec"
)

// setProcessGroup does nothing where process groups do not exist; the process is stopped alone.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the process itself where process groups do not exist.
func killProcessGroup(pid int, _ bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
