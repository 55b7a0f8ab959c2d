//go:build !linux

package plugins

import "syscall"

// procAttr has no parent-death signal off Linux; the SDK's parent watchdog ends an orphan.
func procAttr() *syscall.SysProcAttr { return nil }

func killGroup(int) {}
