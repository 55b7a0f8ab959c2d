package memorytest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/memory"
)

// Clock is a settable clock for Engine.Now, so that listings are byte-identical across stores.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now answers the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// DefaultBindings is the frozen configuration of a conversation-hosted run: the three wave-1 roots,
// all read_write (docs/agent-tools.md#memory-and-skills). They are given out of order on purpose:
// the Engine orders roots itself.
func DefaultBindings() []memory.Scope {
	return []memory.Scope{Workspace, Conversation, User}
}

// harness runs tool calls through an Engine over one store.
type harness struct {
	t        *testing.T
	p        memory.Provider
	clock    *Clock
	engine   *memory.Engine
	bindings []memory.Scope
}

func newHarness(t *testing.T, p memory.Provider) *harness {
	clock := NewClock(T0)
	return &harness{
		t: t, p: p, clock: clock,
		engine:   &memory.Engine{Provider: p, Now: clock.Now},
		bindings: DefaultBindings(),
	}
}

// call runs a tool with a JSON input under the harness's bindings.
func (h *harness) call(tool, input string) memory.Result {
	h.t.Helper()
	return h.callWith(h.bindings, tool, input)
}

func (h *harness) callWith(bindings []memory.Scope, tool, input string) memory.Result {
	h.t.Helper()
	res, err := h.engine.Run(h.t.Context(), tool, json.RawMessage(input), bindings, memory.RunOptions{})
	if err != nil {
		h.t.Fatalf("%s %s: Run error %v", tool, input, err)
	}
	return res
}

// expect runs a call and compares the whole result.
func (h *harness) expect(tool, input string, want memory.Result) {
	h.t.Helper()
	h.expectWith(h.bindings, tool, input, want)
}

func (h *harness) expectWith(bindings []memory.Scope, tool, input string, want memory.Result) {
	h.t.Helper()
	got := h.callWith(bindings, tool, input)
	if diff := cmp.Diff(want, got); diff != "" {
		h.t.Errorf("%s %s (-want +got):\n%s", tool, clip(input), diff)
	}
}

// write stores a document through memory_write and fails on anything but success.
func (h *harness) write(path, content string) {
	h.t.Helper()
	res := h.call(memory.ToolWrite, obj("path", path, "content", content))
	if res.IsError {
		h.t.Fatalf("write %s: %s", path, res.Text)
	}
}

// obj encodes alternating keys and values as a JSON object.
func obj(kv ...any) string {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// done is a successful result.
func done(text, title string) memory.Result {
	return memory.Result{Text: text, Title: title}
}

// refusedText is a refusal result with its whole text.
func refusedText(text string) memory.Result {
	return memory.Result{Text: text, IsError: true, Title: memory.TitleRefused}
}
