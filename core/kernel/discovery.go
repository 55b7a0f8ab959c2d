package kernel

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
)

// The discovery family's canonical names.
const (
	CanonicalToolSearch = declare.CanonicalToolSearch
	CanonicalToolCall   = declare.CanonicalToolCall
)

// Discovery's texts (docs/agent-tools.md#tool-search-and-deferred-tools).
const (
	TitleToolSearch = "tool search"
	TitleToolCall   = "tool call"
	// WordToolNotDeclared is tool_call's refusal of a name outside the frozen declaration.
	WordToolNotDeclared = refusal.CodeToolNotDeclared
	// sentenceSelfCall refuses a tool_call that names tool_call.
	sentenceSelfCall = "tool_call cannot call itself."
)

var (
	searchParams = []string{"query", "limit"}
	callParams   = []string{"name", "input"}
)

// DefaultIndexCacheBytes bounds the memory the search indexes of recent frozen declarations
// hold, as the indexes estimate it. The largest declaration (1 MiB, about 10,000 callables)
// indexes to about 6 MiB of heap (B5's set), so this keeps ten of the largest, or thousands of
// ordinary sets, while a process never holds more than a small share of its memory for them.
const DefaultIndexCacheBytes = 64 << 20

// Discovery runs tool_search and tool_call over the calling round's frozen declaration and skill
// catalog (docs/agent-tools.md#tool-search-and-deferred-tools). Neither adds a tool or reads a
// later announcement: both read only what acceptance froze onto the calling round. The search index
// of a frozen declaration is built once and kept, keyed by the hash of its stored bytes, so a
// search costs a lookup and the matching, never a rebuild.
type Discovery struct {
	Compiler *declare.Compiler
	// CacheBytes bounds the kept indexes; 0 means DefaultIndexCacheBytes.
	CacheBytes int

	once  sync.Once
	cache *indexCache
}

// Index answers the search index of a frozen declaration and its skill catalog, building it on
// first use.
func (d *Discovery) Index(toolDefinitions, skillCatalog []byte) (*SearchIndex, error) {
	d.once.Do(func() {
		max := d.CacheBytes
		if max <= 0 {
			max = DefaultIndexCacheBytes
		}
		d.cache = newIndexCache(max)
	})
	return d.cache.get(toolDefinitions, skillCatalog, func() (*SearchIndex, error) {
		set, err := d.Compiler.Compile(toolDefinitions)
		if err != nil {
			return nil, declare.Fault(err)
		}
		return BuildSearchIndex(set, skillCatalog)
	})
}

func (d *Discovery) roundIndex(ctx context.Context, call *runs.KernelCall) (*SearchIndex, error) {
	if call.Round == nil {
		return nil, errors.New("kernel: a discovery call without a calling round")
	}
	round, err := call.Round(ctx)
	if err != nil {
		return nil, err
	}
	return d.Index(round.ToolDefinitions, round.SkillCatalog)
}

// Search runs tool_search: {query, limit?}; unknown keys are ignored.
func (d *Discovery) Search(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	a, err := ReadArgs(call.Input, searchParams, false)
	if err != nil {
		return nil, err
	}
	q, _ := a.String("query", true, true)
	limit := a.Int("limit", false, 1, MaxSearchLimit, DefaultSearchLimit)
	if e := a.Err(); e != nil {
		return argumentsRefused(call.ToolName, e), nil
	}
	ix, err := d.roundIndex(ctx, call)
	if err != nil {
		return nil, err
	}
	return jsonResult(ix.Search(q, int(limit)), TitleToolSearch), nil
}

// Call runs tool_call: {name, input}; unknown keys are ignored. A name of the frozen
// declaration places the child C-call-1 through the engine's birth path (alias mapping,
// addressing, approval and deadlines all apply there), and the call settles with its child.
func (d *Discovery) Call(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	a, err := ReadArgs(call.Input, callParams, false)
	if err != nil {
		return nil, err
	}
	name, _ := a.String("name", true, true)
	input, _ := a.Object("input", true)
	if e := a.Err(); e != nil {
		return argumentsRefused(call.ToolName, e), nil
	}
	ix, err := d.roundIndex(ctx, call)
	if err != nil {
		return nil, err
	}
	canonical, ok := ix.Lookup(name)
	if !ok {
		return ErrorResult(call.ToolName, WordToolNotDeclared, `"`+name+`" is not a tool this run may call.`), nil
	}
	if canonical == CanonicalToolCall {
		return ErrorResult(call.ToolName, WordInvalidArguments, sentenceSelfCall), nil
	}
	return &runs.KernelOutcome{Place: &runs.Placement{Call: &runs.ChildCall{Name: name, Input: input}, Title: TitleToolCall}}, nil
}

// indexCache keeps search indexes by the SHA-256 of the frozen bytes they index, least
// recently used first out once their estimated size passes the bound. An index being built is
// built once: concurrent searches of the same declaration wait for it.
type indexCache struct {
	mu    sync.Mutex
	max   int
	bytes int
	slots map[[sha256.Size]byte]*cacheSlot
	lru   *list.List // of *cacheSlot, most recent first
}

type cacheSlot struct {
	key  [sha256.Size]byte
	once sync.Once
	ix   *SearchIndex
	err  error
	elem *list.Element
	size int
}

func newIndexCache(max int) *indexCache {
	return &indexCache{max: max, slots: map[[sha256.Size]byte]*cacheSlot{}, lru: list.New()}
}

// cacheKey hashes the declaration and the catalog, the first's length in front so that no
// two pairs share a key.
func cacheKey(defs, catalog []byte) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(defs)))
	h.Write(n[:])
	h.Write(defs)
	h.Write(catalog)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

func (c *indexCache) get(defs, catalog []byte, build func() (*SearchIndex, error)) (*SearchIndex, error) {
	key := cacheKey(defs, catalog)
	c.mu.Lock()
	s, ok := c.slots[key]
	if ok {
		c.lru.MoveToFront(s.elem)
	} else {
		s = &cacheSlot{key: key}
		s.elem = c.lru.PushFront(s)
		c.slots[key] = s
	}
	c.mu.Unlock()
	s.once.Do(func() {
		s.ix, s.err = build()
		c.mu.Lock()
		defer c.mu.Unlock()
		if s.err != nil {
			c.remove(s) // a failed build is not kept: the next call tries again
			return
		}
		if c.slots[s.key] != s {
			return // evicted while it was built: the caller keeps it, nothing counts it
		}
		s.size = s.ix.size
		c.bytes += s.size
		for c.bytes > c.max && c.lru.Len() > 1 {
			c.remove(c.lru.Back().Value.(*cacheSlot))
		}
	})
	return s.ix, s.err
}

// remove forgets a slot (under mu); a caller holding it keeps its index.
func (c *indexCache) remove(s *cacheSlot) {
	if c.slots[s.key] != s {
		return
	}
	delete(c.slots, s.key)
	c.lru.Remove(s.elem)
	c.bytes -= s.size
}
