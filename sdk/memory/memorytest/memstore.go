package memorytest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// MemStore is the reference memory.Provider: every document in a map, every mutation under
// one mutex. It is what the contract means, written as plainly as possible; it keeps nothing
// across processes.
type MemStore struct {
	mu      sync.Mutex
	anchors map[anchorKey]map[string]*memDoc
}

type anchorKey struct {
	kind  memory.ScopeKind
	owner string
}

type memDoc struct {
	entry   memory.Entry
	content string
}

var _ memory.Provider = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{anchors: map[anchorKey]map[string]*memDoc{}}
}

func key(s memory.Scope) anchorKey { return anchorKey{s.Kind, s.OwnerID} }

// Ls implements memory.Provider.
func (m *MemStore) Ls(ctx context.Context, req *memory.LsRequest) (*memory.LsResponse, error) {
	if err := memory.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := &memory.LsResponse{}
	for _, d := range m.sorted(req.Scope, req.NamePrefix) {
		resp.Entries = append(resp.Entries, d.entry)
	}
	return resp, nil
}

// sorted answers the anchor's documents under prefix in name order; the caller holds m.mu.
func (m *MemStore) sorted(s memory.Scope, prefix string) []memDoc {
	var out []memDoc
	for name, d := range m.anchors[key(s)] {
		if strings.HasPrefix(name, prefix) {
			out = append(out, *d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].entry.Name < out[j].entry.Name })
	return out
}

// Read implements memory.Provider.
func (m *MemStore) Read(ctx context.Context, req *memory.ReadRequest) (*memory.ReadResponse, error) {
	if err := checkTarget(req.Scope, req.Name, false); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.anchors[key(req.Scope)][req.Name]
	if !ok {
		return nil, memory.ErrNotFound
	}
	return &memory.ReadResponse{Entry: d.entry, Content: d.content}, nil
}

// Grep implements memory.Provider.
func (m *MemStore) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
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
	m.mu.Lock()
	docs := m.sorted(req.Scope, req.NamePrefix)
	m.mu.Unlock()
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

// Write implements memory.Provider.
func (m *MemStore) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	if err := memory.CheckContent(req.Content); err != nil {
		return nil, err
	}
	if len(req.Content) > memory.MaxDocumentBytes {
		return nil, fmt.Errorf("%w: %d bytes", memory.ErrTooLarge, len(req.Content))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	docs := m.anchors[key(req.Scope)]
	if docs == nil {
		docs = map[string]*memDoc{}
		m.anchors[key(req.Scope)] = docs
	}
	d, exists := docs[req.Name]
	if err := req.Expect.Check(entryOf(d)); err != nil {
		return nil, err
	}
	if !exists {
		if len(docs) >= memory.MaxDocumentsPerAnchor {
			return nil, memory.ErrFull
		}
		d = &memDoc{entry: memory.Entry{ID: memory.NewID()}}
		docs[req.Name] = d
	}
	d.content = req.Content
	d.entry = memory.Entry{
		Name:      req.Name,
		SizeBytes: int64(len(req.Content)),
		WrittenAt: memory.StoredTime(req.WrittenAt),
		Version:   d.entry.Version + 1,
		ID:        d.entry.ID,
	}
	return &memory.WriteResponse{Entry: d.entry, Created: !exists}, nil
}

// Edit implements memory.Provider.
func (m *MemStore) Edit(ctx context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	if err := memory.CheckContent(req.NewText); err != nil {
		return nil, err
	}
	if req.OldText == "" {
		return nil, fmt.Errorf("%w: empty edit text", memory.ErrInvalidArgument)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.anchors[key(req.Scope)][req.Name]
	if err := req.Expect.Check(entryOf(d)); err != nil {
		return nil, err
	}
	if !ok {
		return nil, memory.ErrNotFound
	}
	content, err := memory.ApplyEdit(d.content, req.OldText, req.NewText)
	if err != nil {
		return nil, err
	}
	d.content = content
	d.entry = memory.Entry{
		Name:      req.Name,
		SizeBytes: int64(len(content)),
		WrittenAt: memory.StoredTime(req.WrittenAt),
		Version:   d.entry.Version + 1,
		ID:        d.entry.ID,
	}
	return &memory.EditResponse{Entry: d.entry}, nil
}

// Delete implements memory.Provider.
func (m *MemStore) Delete(ctx context.Context, req *memory.DeleteRequest) (*memory.DeleteResponse, error) {
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	docs := m.anchors[key(req.Scope)]
	d, ok := docs[req.Name]
	if err := req.Expect.Check(entryOf(d)); err != nil {
		return nil, err
	}
	if !ok {
		return nil, memory.ErrNotFound
	}
	delete(docs, req.Name)
	return &memory.DeleteResponse{}, nil
}

// entryOf is the entry of a held document, nil for none.
func entryOf(d *memDoc) *memory.Entry {
	if d == nil {
		return nil
	}
	return &d.entry
}

// checkTarget applies the contract's first checks: scope, name, then access for a mutation.
func checkTarget(s memory.Scope, name string, mutation bool) error {
	if err := memory.ValidScope(s); err != nil {
		return err
	}
	if err := memory.ValidName(name); err != nil {
		return err
	}
	if mutation && !s.Writable() {
		return memory.ErrReadOnly
	}
	return nil
}
