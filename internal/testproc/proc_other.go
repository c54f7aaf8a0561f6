//go:build !unix

package testproc

import (
	"os"
	"os/exec"
)

// SetProcessGroup does nothing where process groups do not exist; the process is stopped alone.
func SetProcessGroup(*exec.Cmd) {}

// KillProcessGroup kills the process itself where process groups do not exist.
func KillProcessGroup(pid int, _ bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
