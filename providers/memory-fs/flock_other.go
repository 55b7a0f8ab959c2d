//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package memoryfs

import (
	"context"
	"errors"
)

var errNoFlock = errors.New("memory-fs needs flock, which this platform lacks")

func checkLocking() error { return errNoFlock }

func lockFile(ctx context.Context, path string) (func(), error) { return nil, errNoFlock }
