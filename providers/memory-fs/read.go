package memoryfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// Reads take no lock: a replace is a rename, so a reader opens either the old file or the new
// one, each whole.

// Read implements memory.Provider.
func (s *Store) Read(ctx context.Context, req *memory.ReadRequest) (*memory.ReadResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkTarget(req.Scope, req.Name, false); err != nil {
		return nil, err
	}
	fileName := docFileName(req.Name)
	data, err := readDocFile(filepath.Join(s.anchorDir(req.Scope), fileName), false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, memory.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	e, content, err := decodeDoc(fileName, data, false)
	if err != nil {
		return nil, err
	}
	if e.Name != req.Name {
		return nil, corrupt(fileName, "header names another document")
	}
	return &memory.ReadResponse{Entry: e, Content: content}, nil
}

// Ls implements memory.Provider. It reads only header lines.
func (s *Store) Ls(ctx context.Context, req *memory.LsRequest) (*memory.LsResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := memory.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	docs, err := s.listDocs(ctx, req.Scope, req.NamePrefix, true)
	if err != nil {
		return nil, err
	}
	resp := &memory.LsResponse{Entries: make([]memory.Entry, len(docs))}
	for i, d := range docs {
		resp.Entries[i] = d.entry
	}
	return resp, nil
}

// Grep implements memory.Provider. The context's deadline is the search budget: it is checked
// before each document is read, and by the matcher every 256 lines.
func (s *Store) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := memory.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	matcher, err := memory.NewMatcher(req)
	if err != nil {
		return nil, err
	}
	if err := memory.CheckDeadline(ctx); err != nil {
		return nil, err
	}
	docs, err := s.listDocs(ctx, req.Scope, req.NamePrefix, false)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		done, err := matcher.Scan(ctx, d.entry.Name, d.content)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return matcher.Response(), nil
}

type storedDoc struct {
	entry   memory.Entry
	content string
}

// listDocs reads the anchor's documents whose name starts with prefix, sorted by name. With
// headerOnly the contents are left empty. A missing anchor directory holds nothing. The
// deadline is checked before each file, which bounds a grep's reading as well as its matching.
func (s *Store) listDocs(ctx context.Context, scope memory.Scope, prefix string, headerOnly bool) ([]storedDoc, error) {
	dir := s.anchorDir(scope)
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable("open anchor", err)
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return nil, unavailable("list anchor", err)
	}
	docs := make([]storedDoc, 0, len(names))
	for _, fileName := range names {
		if !isDocFileName(fileName) {
			continue
		}
		if !headerOnly {
			if err := memory.CheckDeadline(ctx); err != nil {
				return nil, err
			}
		}
		data, err := readDocFile(filepath.Join(dir, fileName), headerOnly)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		e, content, err := decodeDoc(fileName, data, headerOnly)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(e.Name, prefix) {
			docs = append(docs, storedDoc{entry: e, content: content})
		}
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].entry.Name < docs[j].entry.Name })
	return docs, nil
}

// readDocFile reads a document file, or with headerOnly at least its header line. A file
// larger than any well-formed document is corrupt, and is not read into memory.
func readDocFile(path string, headerOnly bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, unavailable("open document", err)
	}
	defer f.Close()
	size := int64(maxHeaderBytes)
	if !headerOnly {
		info, err := f.Stat()
		if err != nil {
			return nil, unavailable("stat document", err)
		}
		if info.Size() > maxFileBytes {
			return nil, corrupt(filepath.Base(path), fmt.Sprintf("file of %d bytes", info.Size()))
		}
		size = info.Size()
	}
	buf := make([]byte, size+1) // one byte more notices a file that grew since the stat
	n, err := io.ReadFull(f, buf)
	switch {
	case err == nil:
		if !headerOnly {
			return nil, corrupt(filepath.Base(path), "file grew while read")
		}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
	default:
		return nil, unavailable("read document", err)
	}
	return buf[:n], nil
}

// checkTarget applies the contract's first checks: scope, name, then access for a mutation.
func checkTarget(scope memory.Scope, name string, mutation bool) error {
	if err := memory.ValidScope(scope); err != nil {
		return err
	}
	if err := memory.ValidName(name); err != nil {
		return err
	}
	if mutation && !scope.Writable() {
		return memory.ErrReadOnly
	}
	return nil
}
