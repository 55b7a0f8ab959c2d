//go:build !linux

package mcpbridge

import "syscall"

// procAttr has nothing to add outside Linux.
func procAttr() *syscall.SysProcAttr { return nil }

// killGroup is a no-op outside Linux; the SDK's own SIGTERM and kill end the direct child.
func killGroup(int) {}
