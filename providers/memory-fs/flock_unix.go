//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package memoryfs

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// File-lock polling: a holder keeps the lock for one write (milliseconds), so waiting starts
// short and backs off to a ceiling that keeps a waiter responsive to its context.
const (
	lockPollStart = 200 * time.Microsecond
	lockPollMax   = 20 * time.Millisecond
)

func checkLocking() error { return nil }

// lockFile takes an exclusive flock on path, creating the file when needed. It polls with a
// non-blocking flock so that the wait ends with ctx; closing the file releases the lock, also
// when the process dies.
func lockFile(ctx context.Context, path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, err
	}
	wait := lockPollStart
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			_ = f.Close()
			return nil, ctx.Err()
		case <-timer.C:
		}
		wait = min(2*wait, lockPollMax)
	}
}
