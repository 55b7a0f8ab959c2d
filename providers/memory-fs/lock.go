package memoryfs

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// anchorLocks serializes this process's mutations per anchor directory. Each lock is a
// one-slot channel so that a waiter can give up when its context ends; entries are dropped
// when nobody holds or waits for them, so the map stays as small as the live work.
type anchorLocks struct {
	mu sync.Mutex
	m  map[string]*anchorLock
}

type anchorLock struct {
	slot chan struct{}
	refs int
}

func (l *anchorLocks) acquire(ctx context.Context, dir string) (release func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*anchorLock{}
	}
	a := l.m[dir]
	if a == nil {
		a = &anchorLock{slot: make(chan struct{}, 1)}
		l.m[dir] = a
	}
	a.refs++
	l.mu.Unlock()

	drop := func() {
		l.mu.Lock()
		a.refs--
		if a.refs == 0 {
			delete(l.m, dir)
		}
		l.mu.Unlock()
	}
	select {
	case a.slot <- struct{}{}:
		return func() { <-a.slot; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}

// lockAnchor takes the anchor's in-process lock, then its file lock, which other processes
// sharing the root honour too.
func (s *Store) lockAnchor(ctx context.Context, dir string) (release func(), err error) {
	unlockProcess, err := s.locks.acquire(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: memoryfs: waiting for the anchor lock: %w", memory.ErrUnavailable, err)
	}
	unlockFile, err := lockFile(ctx, filepath.Join(dir, lockFileName))
	if err != nil {
		unlockProcess()
		return nil, fmt.Errorf("%w: memoryfs: anchor file lock: %w", memory.ErrUnavailable, err)
	}
	return func() { unlockFile(); unlockProcess() }, nil
}
