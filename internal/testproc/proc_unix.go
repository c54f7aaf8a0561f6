//go:build unix

package testproc

import (
	"os/exec"
	"syscall"
)

// SetProcessGroup puts the helper in a process group of its own, so that stopping it also stops
// anything node spawned and never touches the test binary's group.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillProcessGroup signals the process group led by pid: SIGTERM first, SIGKILL when hard.
func KillProcessGroup(pid int, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}
