package memoryfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// Version is the semantic version of this store, reported by the plugin that serves it.
const Version = "1.0.0"

// staleTempAge is how old a leftover temporary file must be before Open removes it: a write
// finishes in milliseconds, and an hour leaves any process still sharing the root well clear.
const staleTempAge = time.Hour

// ErrConfigInvalid is a configuration Open cannot use: no root, or a root holding another
// format. A plugin refuses its load on it rather than retrying.
var ErrConfigInvalid = errors.New("memoryfs: configuration invalid")

// Config is the store's configuration, the plugin's config block.
type Config struct {
	// Root is the directory holding the store; it is created (0700) when missing.
	Root string `json:"root"`
	// Fsync makes every write durable before it is acknowledged. Nil means true; turn it off
	// only in tests, where a crash loses nothing of value.
	Fsync *bool `json:"fsync,omitempty"`
}

// Store is the filesystem memory.Provider. It is safe for concurrent use, and several
// processes may share one root.
type Store struct {
	cfg    Config
	root   string
	fsync  bool
	locks  anchorLocks
	closed atomic.Bool
	// knownAnchors holds the anchor directories known to exist (see ensureAnchor).
	knownAnchors sync.Map
}

var _ memory.Provider = (*Store)(nil)

// Open prepares the root (FORMAT, ROOT_ID, the anchor directories), removes temporary files older than
// staleTempAge that a crashed writer left behind, and returns the store. A missing root or an
// unknown format is ErrConfigInvalid; a filesystem failure wraps memory.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Root == "" {
		return nil, fmt.Errorf("%w: root is required", ErrConfigInvalid)
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: root %q: %v", ErrConfigInvalid, cfg.Root, err)
	}
	if err := checkLocking(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfigInvalid, err)
	}
	s := &Store{cfg: cfg, root: root, fsync: cfg.Fsync == nil || *cfg.Fsync}
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) prepare(ctx context.Context) error {
	if err := os.MkdirAll(s.root, dirMode); err != nil {
		return unavailable("create root", err)
	}
	if err := s.checkFormat(); err != nil {
		return err
	}
	if err := s.ensureRootID(); err != nil {
		return err
	}
	if err := s.ensureDir(filepath.Join(s.root, anchorsDir), s.root); err != nil {
		return err
	}
	for _, kind := range anchorKinds {
		if err := s.ensureDir(filepath.Join(s.root, anchorsDir, string(kind)), filepath.Join(s.root, anchorsDir)); err != nil {
			return err
		}
	}
	return s.removeStaleTemps(ctx)
}

// checkFormat writes FORMAT into a fresh root, or checks the one there.
func (s *Store) checkFormat() error {
	path := filepath.Join(s.root, formatFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if string(data) != formatLine {
			return fmt.Errorf("%w: %s holds %q, want %q", ErrConfigInvalid, path, clipText(string(data)), formatLine)
		}
		return nil
	case errors.Is(err, os.ErrNotExist):
		return s.replaceFile(s.root, path, []byte(formatLine))
	default:
		return unavailable("read FORMAT", err)
	}
}

// ensureDir creates dir when missing and then syncs its parent, so the new entry is durable.
func (s *Store) ensureDir(dir, parent string) error {
	err := os.Mkdir(dir, dirMode)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return unavailable("create directory", err)
	}
	return s.syncDir(parent)
}

// removeStaleTemps deletes temporary files a crashed writer left, once they are old enough
// that no live writer can still own them.
func (s *Store) removeStaleTemps(ctx context.Context) error {
	cutoff := time.Now().Add(-staleTempAge)
	// The root holds one only when a process died writing the root's marker.
	if err := removeStaleIn(s.root, cutoff); err != nil {
		return err
	}
	for _, kind := range anchorKinds {
		kindDir := filepath.Join(s.root, anchorsDir, string(kind))
		owners, err := os.ReadDir(kindDir)
		if err != nil {
			return unavailable("list anchors", err)
		}
		for _, owner := range owners {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%w: %w", memory.ErrUnavailable, err)
			}
			if !owner.IsDir() {
				continue
			}
			if err := removeStaleIn(filepath.Join(kindDir, owner.Name()), cutoff); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeStaleIn deletes the temporary files in dir last modified before cutoff.
func removeStaleIn(dir string, cutoff time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return unavailable("list anchor", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		info, err := e.Info()
		if err == nil && info.ModTime().Before(cutoff) {
			_ = os.Remove(filepath.Join(dir, e.Name())) // another process may have removed it
		}
	}
	return nil
}

// Close stops the store: later calls answer memory.ErrUnavailable. Nothing is held open
// between calls, so there is nothing to flush.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// Reopen closes the store and opens it again on the same root (memorytest.Reopener).
func (s *Store) Reopen(ctx context.Context) (memory.Provider, error) {
	if err := s.Close(); err != nil {
		return nil, err
	}
	return Open(ctx, s.cfg)
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return fmt.Errorf("%w: memoryfs: store is closed", memory.ErrUnavailable)
	}
	return nil
}

func unavailable(what string, err error) error {
	return fmt.Errorf("%w: memoryfs: %s: %v", memory.ErrUnavailable, what, err)
}

func clipText(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}
