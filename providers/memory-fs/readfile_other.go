//go:build !linux

package memoryfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// dirHandle is an open anchor directory; elsewhere than Linux files are opened by path.
type dirHandle struct{ f *os.File }

func openDir(dir string) (*dirHandle, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return &dirHandle{f: f}, nil
}

func (d *dirHandle) names() ([]string, error) { return d.f.Readdirnames(-1) }

func (d *dirHandle) close() { _ = d.f.Close() }

// readFileInto reads a file into buf until end of file, a full buffer, or enough (headerOnly
// decides how much is enough), answering the bytes read. path is relative to the open
// directory handle when there is one.
func readFileInto(handle *dirHandle, path string, buf []byte, headerOnly bool) (int, error) {
	if handle != nil {
		path = filepath.Join(handle.f.Name(), path)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, os.ErrNotExist
		}
		return 0, unavailable("open document", err)
	}
	defer f.Close()
	total := 0
	for total < len(buf) {
		n, err := f.Read(buf[total:])
		total += n
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, unavailable("read document", err)
		}
		if enough(buf[:total], headerOnly) {
			break
		}
	}
	return total, nil
}
