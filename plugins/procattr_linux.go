//go:build linux

package plugins

import "syscall"

// procAttr puts the plugin in its own process group, so the host can kill helpers it started,
// and asks the kernel to kill it when the launching thread dies (best effort: Pdeathsig is tied
// to that thread; the SDK's parent watchdog covers the rest).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the plugin's process group.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
