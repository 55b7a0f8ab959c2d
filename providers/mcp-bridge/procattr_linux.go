package mcpbridge

import "syscall"

// procAttr puts a stdio server in its own process group, so the bridge can end its whole tree,
// and kills it when the bridge dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup ends a stdio server's process group.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
