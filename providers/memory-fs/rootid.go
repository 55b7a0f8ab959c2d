package memoryfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

// PluginName is the name the memory-fs plugin reports in its Info (cmd/nexus-memory-fs). A host
// that runs several instances recognises memory-fs by it and reads the root's marker
// (docs/operations.md#several-instances).
const PluginName = "memory-fs"

// RootIDFile is the root's marker: a random id written once, when a root is first prepared, and
// never changed. Two stores reading one marker share one root, whatever path each reaches it by;
// two roots that look alike (one path on two machines) hold different markers. A copy of a root
// copies its marker: delete ROOT_ID in a copy meant to be a root of its own.
const RootIDFile = "ROOT_ID"

// rootIDBytes is the marker's random part: sixteen bytes never collide among roots.
const rootIDBytes = 16

// rootIDPattern is a marker's one line, without its newline.
var rootIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// ensureRootID writes the root's marker when it has none. Several processes preparing one fresh
// root at once agree on one marker: each links a complete file into place, and only the first
// link succeeds.
func (s *Store) ensureRootID() error {
	path := filepath.Join(s.root, RootIDFile)
	_, err := readRootID(path)
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var b [rootIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return unavailable("root id", err)
	}
	tmp, err := os.CreateTemp(s.root, tempPrefix+"*")
	if err != nil {
		return unavailable("create temporary file", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.WriteString(hex.EncodeToString(b[:]) + "\n")
	if err == nil && s.fsync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return unavailable("write root id", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return unavailable("link root id", err)
	}
	if err := s.syncDir(s.root); err != nil {
		return err
	}
	_, err = readRootID(path)
	return err
}

// readRootID reads a marker file; a missing file wraps os.ErrNotExist, a malformed one is
// ErrConfigInvalid.
func readRootID(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", unavailable("read root id", err)
	}
	id := strings.TrimSuffix(string(data), "\n")
	if !rootIDPattern.MatchString(id) {
		return "", fmt.Errorf("%w: %s holds %q, not a root id (32 lowercase hex digits)", ErrConfigInvalid, path, clipText(string(data)))
	}
	return id, nil
}

// RootID answers the marker of the root at root: a missing marker wraps os.ErrNotExist (a root
// never opened), a malformed one is ErrConfigInvalid.
func RootID(root string) (string, error) {
	return readRootID(filepath.Join(root, RootIDFile))
}

// RootID is the store's root marker.
func (s *Store) RootID() (string, error) { return RootID(s.root) }

// Root is the store's absolute root directory.
func (s *Store) Root() string { return s.root }

// ResolveRoot answers the absolute root a plugin configured with cfg opens (docs/plugins.md): the
// config block's root, a relative one taken from the plugin's data directory (its working
// directory), else the data directory itself. Configure opens exactly this root, so a host reads
// the same marker the plugin wrote.
func ResolveRoot(cfg plugin.Config) (string, error) {
	c, err := configOf(cfg)
	if err != nil {
		return "", err
	}
	return c.Root, nil
}

// configOf decodes a plugin's config block and resolves its root.
func configOf(cfg plugin.Config) (Config, error) {
	var c Config
	if err := cfg.Decode(&c); err != nil {
		return Config{}, err
	}
	if c.Root == "" {
		c.Root = cfg.DataDir
	}
	if c.Root == "" {
		return Config{}, fmt.Errorf("%w: %w: root is required", plugin.ErrConfigInvalid, ErrConfigInvalid)
	}
	if !filepath.IsAbs(c.Root) && cfg.DataDir != "" {
		c.Root = filepath.Join(cfg.DataDir, c.Root)
	}
	root, err := filepath.Abs(c.Root)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w: root %q: %v", plugin.ErrConfigInvalid, ErrConfigInvalid, c.Root, err)
	}
	c.Root = root
	return c, nil
}
