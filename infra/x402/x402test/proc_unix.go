//go:build unix

package x402test

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts a helper in a process group of its own, so that stopping it also stops
// anything it spawned and never touches the test binary's group.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup signals the process group led by pid: SIGTERM first, SIGKILL when hard.
func killProcessGroup(pid int, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}
