//go:build linux

package memoryfs

import (
	"errors"
	"os"
	"syscall"
)

// On Linux documents are read with bare open/read/close system calls, relative to the open
// anchor directory when there is one. os.Open would add an fstat and an epoll registration
// attempt per file; in a scan over many small documents those calls cost more than the
// reading itself.

// atFDCWD makes openat resolve a path against the working directory, as open does.
const atFDCWD = -0x64

// dirHandle is an open anchor directory.
type dirHandle struct {
	f  *os.File
	fd int
}

func openDir(dir string) (*dirHandle, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return &dirHandle{f: f, fd: int(f.Fd())}, nil
}

func (d *dirHandle) names() ([]string, error) { return d.f.Readdirnames(-1) }

func (d *dirHandle) close() { _ = d.f.Close() }

// readFileInto reads a file into buf until end of file, a full buffer, or enough (headerOnly
// decides how much is enough), answering the bytes read. path is relative to the open
// directory handle when there is one.
func readFileInto(handle *dirHandle, path string, buf []byte, headerOnly bool) (int, error) {
	dirfd := atFDCWD
	if handle != nil {
		dirfd = handle.fd
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Openat(dirfd, path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return 0, os.ErrNotExist
		}
		return 0, unavailable("open document", err)
	}
	defer syscall.Close(fd)
	total := 0
	for total < len(buf) {
		n, err := syscall.Read(fd, buf[total:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0, unavailable("read document", err)
		}
		if n == 0 {
			break
		}
		total += n
		if enough(buf[:total], headerOnly) {
			break
		}
	}
	return total, nil
}
