package memoryfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// Write implements memory.Provider: under the anchor's lock, count on create, then replace the
// file atomically.
func (s *Store) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	if err := memory.CheckContent(req.Content); err != nil {
		return nil, err
	}
	if len(req.Content) > memory.MaxDocumentBytes {
		return nil, fmt.Errorf("%w: %d bytes", memory.ErrTooLarge, len(req.Content))
	}
	dir := s.anchorDir(req.Scope)
	if err := s.ensureAnchor(dir); err != nil {
		return nil, err
	}
	release, err := s.lockAnchor(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer release()

	fileName := docFileName(req.Name)
	path := filepath.Join(dir, fileName)
	var version uint64
	id := memory.NewID()
	file, err := readDoc(nil, dir, fileName, true)
	switch {
	case err == nil:
		cur, _, err := decodeDoc(fileName, file.data, true)
		file.release()
		if err != nil {
			return nil, err
		}
		if err := req.Expect.Check(&cur); err != nil {
			return nil, err
		}
		version = cur.Version
		if cur.ID != "" {
			id = cur.ID
		}
	case errors.Is(err, os.ErrNotExist):
		if err := req.Expect.Check(nil); err != nil {
			return nil, err
		}
		n, err := countDocs(dir)
		if err != nil {
			return nil, err
		}
		if n >= memory.MaxDocumentsPerAnchor {
			return nil, memory.ErrFull
		}
	default:
		return nil, err
	}
	e := memory.Entry{Name: req.Name, SizeBytes: int64(len(req.Content)), WrittenAt: memory.StoredTime(req.WrittenAt), Version: version + 1, ID: id}
	if err := s.replaceFile(dir, path, encodeDoc(e, req.Content)); err != nil {
		return nil, err
	}
	return &memory.WriteResponse{Entry: e, Created: version == 0}, nil
}

// Edit implements memory.Provider: read, apply, and replace atomically, all under the lock.
func (s *Store) Edit(ctx context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	if err := memory.CheckContent(req.NewText); err != nil {
		return nil, err
	}
	if req.OldText == "" {
		return nil, fmt.Errorf("%w: empty edit text", memory.ErrInvalidArgument)
	}
	dir := s.anchorDir(req.Scope)
	release, err := s.lockExisting(ctx, dir)
	if err != nil {
		return nil, missing(req.Expect, err)
	}
	defer release()

	fileName := docFileName(req.Name)
	path := filepath.Join(dir, fileName)
	file, err := readDoc(nil, dir, fileName, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, missing(req.Expect, memory.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	cur, content, err := decodeDoc(fileName, file.data, false)
	if err == nil {
		err = req.Expect.Check(&cur)
	}
	if err != nil {
		file.release()
		return nil, err
	}
	if cur.ID == "" {
		cur.ID = memory.NewID()
	}
	next, err := memory.ApplyEdit(string(content), req.OldText, req.NewText)
	file.release()
	if err != nil {
		return nil, err
	}
	e := memory.Entry{Name: req.Name, SizeBytes: int64(len(next)), WrittenAt: memory.StoredTime(req.WrittenAt), Version: cur.Version + 1, ID: cur.ID}
	if err := s.replaceFile(dir, path, encodeDoc(e, next)); err != nil {
		return nil, err
	}
	return &memory.EditResponse{Entry: e}, nil
}

// Delete implements memory.Provider: unlink under the lock, then sync the directory.
func (s *Store) Delete(ctx context.Context, req *memory.DeleteRequest) (*memory.DeleteResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	dir := s.anchorDir(req.Scope)
	release, err := s.lockExisting(ctx, dir)
	if err != nil {
		return nil, missing(req.Expect, err)
	}
	defer release()

	fileName := docFileName(req.Name)
	if req.Expect != nil {
		file, err := readDoc(nil, dir, fileName, true)
		if errors.Is(err, os.ErrNotExist) {
			return nil, missing(req.Expect, memory.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		cur, _, err := decodeDoc(fileName, file.data, true)
		file.release()
		if err == nil {
			err = req.Expect.Check(&cur)
		}
		if err != nil {
			return nil, err
		}
	}
	err = os.Remove(filepath.Join(dir, fileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, memory.ErrNotFound
	}
	if err != nil {
		return nil, unavailable("delete document", err)
	}
	if err := s.syncDir(dir); err != nil {
		return nil, err
	}
	return &memory.DeleteResponse{}, nil
}

// missing answers a mutation that found no document: ErrStale when its Expect named one,
// else err (ErrNotFound, or the failure that kept the anchor from being read).
func missing(e *memory.Expect, err error) error {
	if errors.Is(err, memory.ErrNotFound) {
		if serr := e.Check(nil); serr != nil {
			return serr
		}
	}
	return err
}

// ensureAnchor creates an anchor's directory on its first write. The store never removes an
// anchor directory, so one this process has seen is remembered and not asked for again.
func (s *Store) ensureAnchor(dir string) error {
	if _, known := s.knownAnchors.Load(dir); known {
		return nil
	}
	if err := s.ensureDir(dir, filepath.Dir(dir)); err != nil {
		return err
	}
	s.knownAnchors.Store(dir, struct{}{})
	return nil
}

// lockExisting locks an anchor that must already exist: an anchor never written holds no
// document, so edit and delete answer ErrNotFound without creating its directory.
func (s *Store) lockExisting(ctx context.Context, dir string) (func(), error) {
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, memory.ErrNotFound
		}
		return nil, unavailable("stat anchor", err)
	}
	return s.lockAnchor(ctx, dir)
}

// countDocs counts an anchor's document files; the caller holds the anchor's lock.
func countDocs(dir string) (int, error) {
	f, err := os.Open(dir)
	if err != nil {
		return 0, unavailable("open anchor", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, unavailable("list anchor", err)
	}
	n := 0
	for _, name := range names {
		if isDocFileName(name) {
			n++
		}
	}
	return n, nil
}

// replaceFile writes data to path atomically and, with fsync on, durably: a temporary file in
// the same directory, written, synced and closed, renamed over path, then the directory synced
// so the rename itself survives a crash. On failure the temporary file is removed and path is
// untouched.
func (s *Store) replaceFile(dir, path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return unavailable("create temporary file", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return unavailable("write temporary file", err)
	}
	if s.fsync {
		if err := tmp.Sync(); err != nil {
			return unavailable("sync temporary file", err)
		}
	}
	if err := tmp.Close(); err != nil {
		return unavailable("close temporary file", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return unavailable("rename into place", err)
	}
	return s.syncDir(dir)
}

// syncDir makes a directory's entries (a rename, a new file, an unlink) durable.
func (s *Store) syncDir(dir string) error {
	if !s.fsync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return unavailable("open directory", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return unavailable("sync directory", err)
	}
	return nil
}
