package memoryfs

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

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
	file, err := readDoc(nil, s.anchorDir(req.Scope), fileName, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, memory.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer file.release()
	e, content, err := decodeDoc(fileName, file.data, false)
	if err != nil {
		return nil, err
	}
	if e.Name != req.Name {
		return nil, corrupt(fileName, "header names another document")
	}
	return &memory.ReadResponse{Entry: e, Content: string(content)}, nil
}

// Ls implements memory.Provider. It reads only header lines.
func (s *Store) Ls(ctx context.Context, req *memory.LsRequest) (*memory.LsResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := memory.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	docs, release, err := s.listDocs(ctx, req.Scope, req.NamePrefix, true)
	if err != nil {
		return nil, err
	}
	defer release()
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
	docs, release, err := s.listDocs(ctx, req.Scope, req.NamePrefix, false)
	if err != nil {
		return nil, err
	}
	defer release()
	for _, d := range docs {
		done, err := matcher.ScanBytes(ctx, d.entry.Name, d.content)
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
	content []byte // aliases file's buffer until the listing is released
	file    docFile
}

// listDocs reads the anchor's documents whose name starts with prefix, sorted by name. With
// headerOnly the contents are left empty. The contents live in pooled buffers until release is
// called. A missing anchor directory holds nothing. The deadline is checked before each file is
// read, which bounds a grep's reading as well as its matching.
func (s *Store) listDocs(ctx context.Context, scope memory.Scope, prefix string, headerOnly bool) (docs []storedDoc, release func(), err error) {
	release = func() {}
	dir := s.anchorDir(scope)
	handle, err := openDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, release, nil
	}
	if err != nil {
		return nil, nil, unavailable("open anchor", err)
	}
	defer handle.close()
	names, err := handle.names()
	if err != nil {
		return nil, nil, unavailable("list anchor", err)
	}
	var files []string
	for _, fileName := range names {
		if isDocFileName(fileName) {
			files = append(files, fileName)
		}
	}
	slots := make([]docSlot, len(files))
	load := func(i int) {
		if !headerOnly {
			if slots[i].err = memory.CheckDeadline(ctx); slots[i].err != nil {
				return
			}
		}
		file, err := readDoc(handle, dir, files[i], headerOnly)
		if err != nil {
			slots[i].err = err
			return
		}
		slots[i].doc.entry, slots[i].doc.content, slots[i].err = decodeDoc(files[i], file.data, headerOnly)
		if headerOnly || slots[i].err != nil {
			file.release()
			return
		}
		slots[i].doc.file = file
	}
	readAll(len(files), headerOnly, load)
	releaseAll := func() {
		for _, slot := range slots {
			if slot.doc.file.buf != nil {
				slot.doc.file.release()
			}
		}
	}
	docs = make([]storedDoc, 0, len(files))
	for _, slot := range slots {
		if errors.Is(slot.err, os.ErrNotExist) {
			continue // deleted since the listing
		}
		if slot.err != nil {
			releaseAll()
			return nil, nil, slot.err
		}
		if strings.HasPrefix(slot.doc.entry.Name, prefix) {
			docs = append(docs, slot.doc)
		}
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].entry.Name < docs[j].entry.Name })
	return docs, releaseAll, nil
}

type docSlot struct {
	doc storedDoc
	err error
}

// parallelReadMin is the document count from which whole documents are read by several
// goroutines: reading is system calls, which overlap well, and below this count starting
// goroutines costs more than it saves.
const parallelReadMin = 8

// readAll calls load for 0..n-1, spread over up to GOMAXPROCS goroutines (at most 4) when whole
// documents are read and there are enough of them.
func readAll(n int, headerOnly bool, load func(int)) {
	workers := min(runtime.GOMAXPROCS(0), 4)
	if headerOnly || n < parallelReadMin || workers < 2 {
		for i := range n {
			load(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				load(i)
			}
		})
	}
	wg.Wait()
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
