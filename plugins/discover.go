package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nexuskernel/nexus/sdk/refusal"
)

func dirOf(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return filepath.Dir(abs)
	}
	return filepath.Dir(path)
}

// Resolver resolves catalog commands, never through $PATH (docs/plugins.md#the-plugin-block).
type Resolver struct {
	// FlagDirs are the --plugin-dir flags in order.
	FlagDirs []string
	// ConfigDirs are the plugin_dirs entries in order.
	ConfigDirs []string
	// ExecutableDir is the directory of the running nexus binary; "" skips it.
	ExecutableDir string
}

// Dirs is the search order for a bare command name.
func (r Resolver) Dirs() []string {
	var out []string
	out = append(out, r.FlagDirs...)
	out = append(out, r.ConfigDirs...)
	if r.ExecutableDir != "" {
		out = append(out, r.ExecutableDir)
	}
	return out
}

// Resolve answers the executable for an entry: an absolute command as is, a relative one with
// "/" against the configuration's directory, a bare name in Dirs, first match winning. A
// missing, non-regular or non-executable file is a refusal naming every directory searched.
func (r Resolver) Resolve(e Entry) (string, *refusal.Refusal) {
	cmd := e.Command
	switch {
	case filepath.IsAbs(cmd):
		if err := executable(cmd); err != nil {
			return "", notFound("%s: %v", cmd, err)
		}
		return cmd, nil
	case strings.Contains(cmd, "/"):
		p := filepath.Join(e.ConfigDir, cmd)
		if err := executable(p); err != nil {
			return "", notFound("%s (relative to %s): %v", cmd, e.ConfigDir, err)
		}
		return p, nil
	}
	dirs := r.Dirs()
	for _, d := range dirs {
		p := filepath.Join(d, cmd)
		if executable(p) == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, nil
			}
			return p, nil
		}
	}
	return "", notFound("%s is not an executable file in any of: %s", cmd, strings.Join(dirs, ", "))
}

func notFound(format string, args ...any) *refusal.Refusal {
	return loadRefusal(CodeCommandNotFound, format, args...)
}

// executable checks that path is a regular file with an execute bit.
func executable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	if info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not executable")
	}
	return nil
}

// FileDigest is the hex SHA-256 of a file: what a catalog's sha256 pins.
func FileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Discovered is an executable named nexus-* in a plugin directory.
type Discovered struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Discover lists the executables named nexus-* in dirs with their digests, to help fill the
// catalog. It launches nothing.
func Discover(dirs []string) []Discovered {
	var out []Discovered
	seen := map[string]bool{}
	for _, d := range dirs {
		matches, _ := filepath.Glob(filepath.Join(d, "nexus-*"))
		sort.Strings(matches)
		for _, m := range matches {
			if seen[m] || executable(m) != nil {
				continue
			}
			seen[m] = true
			if sum, err := FileDigest(m); err == nil {
				out = append(out, Discovered{Path: m, SHA256: sum})
			}
		}
	}
	return out
}
