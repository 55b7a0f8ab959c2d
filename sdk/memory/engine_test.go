package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// scripted is a Provider whose every method answers fail, and records what it was asked.
type scripted struct {
	fail  func(method string) error
	panic bool
	mu    sync.Mutex
	calls []any
}

func (s *scripted) answer(method string, req any) error {
	s.mu.Lock()
	s.calls = append(s.calls, req)
	s.mu.Unlock()
	if s.panic {
		panic("store bug")
	}
	if s.fail != nil {
		return s.fail(method)
	}
	return nil
}

func (s *scripted) Ls(_ context.Context, req *memory.LsRequest) (*memory.LsResponse, error) {
	return nil, s.answer("ls", req)
}
func (s *scripted) Read(_ context.Context, req *memory.ReadRequest) (*memory.ReadResponse, error) {
	return nil, s.answer("read", req)
}
func (s *scripted) Grep(_ context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	return nil, s.answer("grep", req)
}
func (s *scripted) Write(_ context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	return nil, s.answer("write", req)
}
func (s *scripted) Edit(_ context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	return nil, s.answer("edit", req)
}
func (s *scripted) Delete(_ context.Context, req *memory.DeleteRequest) (*memory.DeleteResponse, error) {
	return nil, s.answer("delete", req)
}

const unavailableText = "memory_unavailable: the memory store could not complete this call"

var calls = []struct{ tool, input string }{
	{"memory_ls", `{}`},
	{"memory_read", `{"path":"workspace/a"}`},
	{"memory_grep", `{"pattern":"x"}`},
	{"memory_write", `{"path":"workspace/a","content":"x"}`},
	{"memory_edit", `{"path":"workspace/a","old_text":"x","new_text":"y"}`},
	{"memory_delete", `{"path":"workspace/a"}`},
}

// TestStoreFailures: a store error the verb does not expect, a nil response, and a panic are
// all memory_unavailable with its fixed sentence, never a Go error.
func TestStoreFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		store *scripted
	}{
		{"unavailable", &scripted{fail: func(string) error { return fmt.Errorf("disk: %w", memory.ErrUnavailable) }}},
		{"invalid argument", &scripted{fail: func(string) error { return memory.ErrInvalidArgument }}},
		{"unknown error", &scripted{fail: func(string) error { return errors.New("connection reset") }}},
		{"internal kind", &scripted{fail: func(string) error { return memory.ErrorFromKind(memory.KindInternal, "boom") }}},
		{"sentinel the verb never answers", &scripted{fail: func(m string) error {
			if m == "ls" || m == "grep" || m == "read" {
				return memory.ErrFull
			}
			return memory.ErrPatternInvalid
		}}},
		{"nil response", &scripted{}},
		{"panic", &scripted{panic: true}},
	} {
		e := &memory.Engine{Provider: c.store}
		for _, call := range calls {
			res, err := e.Run(t.Context(), call.tool, json.RawMessage(call.input), memorytest.DefaultBindings(), memory.RunOptions{})
			if err != nil {
				t.Errorf("%s, %s: Run error %v", c.name, call.tool, err)
			}
			if diff := cmp.Diff(refused(unavailableText), res); diff != "" {
				t.Errorf("%s, %s (-want +got):\n%s", c.name, call.tool, diff)
			}
		}
	}
}

// TestPluginShutdown: a store call that could not reach its plugin process is no answer at all:
// Run returns the error, wrapped or not, on every verb, so the host handles a crash instead of
// committing memory_unavailable.
func TestPluginShutdown(t *testing.T) {
	t.Parallel()
	for _, shutdown := range []error{plugin.ErrPluginShutdown, fmt.Errorf("%w: connection reset", plugin.ErrPluginShutdown)} {
		e := &memory.Engine{Provider: &scripted{fail: func(string) error { return shutdown }}}
		for _, call := range calls {
			res, err := e.Run(t.Context(), call.tool, json.RawMessage(call.input), memorytest.DefaultBindings(), memory.RunOptions{})
			if !errors.Is(err, plugin.ErrPluginShutdown) {
				t.Errorf("%s after %v: error %v, result %+v; want ErrPluginShutdown", call.tool, shutdown, err, res)
			}
		}
	}
}

// TestStoreSentinels maps each sentinel a verb expects to its word, with the path as detail.
func TestStoreSentinels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tool, input string
		err         error
		want        string
	}{
		{"memory_read", `{"path":"workspace/a"}`, memory.ErrNotFound, "memory_not_found: workspace/a"},
		{"memory_read", `{"path":"workspace/a"}`, memory.ErrNameInvalid, "memory_path_invalid: workspace/a"},
		{"memory_write", `{"path":"workspace/a","content":"x"}`, memory.ErrFull, "memory_full: workspace/a"},
		{"memory_write", `{"path":"workspace/a","content":"x"}`, memory.ErrTooLarge, "memory_document_too_large: workspace/a"},
		{"memory_write", `{"path":"workspace/a","content":"x"}`, memory.ErrContentInvalid, "memory_content_invalid: workspace/a"},
		{"memory_write", `{"path":"workspace/a","content":"x"}`, memory.ErrReadOnly, "memory_read_only: workspace/a"},
		{"memory_edit", `{"path":"workspace/a","old_text":"x","new_text":"y"}`, memory.ErrEditNotFound, "memory_edit_not_found: workspace/a"},
		{"memory_edit", `{"path":"workspace/a","old_text":"x","new_text":"y"}`, memory.ErrEditAmbiguous, "memory_edit_ambiguous: workspace/a"},
		{"memory_edit", `{"path":"workspace/a","old_text":"x","new_text":"y"}`, memory.ErrNotFound, "memory_not_found: workspace/a"},
		{"memory_edit", `{"path":"workspace/a","old_text":"x","new_text":"y"}`, memory.ErrTooLarge, "memory_document_too_large: workspace/a"},
		{"memory_delete", `{"path":"workspace/a"}`, memory.ErrNotFound, "memory_not_found: workspace/a"},
		{"memory_grep", `{"pattern":"x{1}"}`, memory.ErrPatternTooCostly, "memory_pattern_too_costly: x{1}"},
		{"memory_grep", `{"pattern":"x{1}"}`, memory.ErrPatternInvalid, "memory_pattern_invalid: x{1}"},
		// A sentinel that crossed the wire comes back wrapped with its message.
		{"memory_read", `{"path":"workspace/a"}`, memory.ErrorFromKind(memory.KindNotFound, "no such file"), "memory_not_found: workspace/a"},
	} {
		e := &memory.Engine{Provider: &scripted{fail: func(string) error { return c.err }}}
		got := run(t, e, c.tool, c.input)
		if diff := cmp.Diff(refused(c.want), got); diff != "" {
			t.Errorf("%s after %v (-want +got):\n%s", c.tool, c.err, diff)
		}
	}
}

// TestBindingConfiguration: a configuration that cannot be resolved is the caller's fault and
// answers memory_unavailable without reaching the store.
func TestBindingConfiguration(t *testing.T) {
	t.Parallel()
	dup := memorytest.User
	dup.Binding = "workspace"
	badOwner := memorytest.Workspace
	badOwner.OwnerID = "workspace-1"
	noAccess := memorytest.Workspace
	noAccess.Access = ""
	for name, bindings := range map[string][]memory.Scope{
		"duplicate root":   {memorytest.Workspace, dup},
		"bad owner":        {badOwner, memorytest.User},
		"missing access":   {noAccess},
		"bad binding name": {{Binding: "Team", Kind: memory.ScopeWorkspace, OwnerID: memorytest.OwnerWorkspace, Access: memory.AccessRead}},
	} {
		store := &scripted{}
		e := &memory.Engine{Provider: store}
		for _, call := range calls {
			res, err := e.Run(t.Context(), call.tool, json.RawMessage(call.input), bindings, memory.RunOptions{})
			if err != nil || res.Text != unavailableText || !res.IsError {
				t.Errorf("%s, %s: %+v, %v", name, call.tool, res, err)
			}
		}
		if len(store.calls) != 0 {
			t.Errorf("%s: the store was called %d times", name, len(store.calls))
		}
	}
	var e memory.Engine // no provider
	res, err := e.Run(t.Context(), "memory_ls", nil, memorytest.DefaultBindings(), memory.RunOptions{})
	if err != nil || res.Text != unavailableText {
		t.Errorf("engine without a provider: %+v, %v", res, err)
	}
}

// TestInputShapes: an input that is not a JSON object reads as a path the engine cannot use;
// an absent input or null is {}.
func TestInputShapes(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	for _, input := range []string{`[]`, `"workspace/a"`, `5`, `{"path":`, `{"path":"workspace/a"} x`, `true`} {
		for _, call := range calls {
			if got := run(t, e, call.tool, input); got.Text != "memory_path_invalid" || !got.IsError {
				t.Errorf("%s %s: %+v", call.tool, input, got)
			}
		}
	}
	for _, input := range []string{``, `null`, ` {} `} {
		if got := run(t, e, "memory_ls", input); got.Text != "No memory documents." {
			t.Errorf("ls %q: %+v", input, got)
		}
		if got := run(t, e, "memory_read", input); got.Text != "memory_path_invalid" {
			t.Errorf("read %q: %+v", input, got)
		}
	}
	// A key given twice: the last one counts, as in encoding/json.
	run(t, e, "memory_write", `{"path":"workspace/a","content":"x"}`)
	if got := run(t, e, "memory_read", `{"path":"workspace/missing","path":"workspace/a"}`); got.Text != "x" {
		t.Errorf("repeated key: %+v", got)
	}
	// Invalid UTF-8 inside a JSON string reaches the store as U+FFFD.
	if got := run(t, e, "memory_write", "{\"path\":\"workspace/b\",\"content\":\"\xff\"}"); got.Text != "Wrote workspace/b (3 bytes)." {
		t.Errorf("invalid UTF-8 content: %+v", got)
	}
}

// TestEngineClock: writes and edits carry the engine's clock in UTC, cut to microseconds.
func TestEngineClock(t *testing.T) {
	t.Parallel()
	store := &scripted{fail: func(string) error { return memory.ErrNotFound }}
	at := time.Date(2031, 2, 3, 4, 5, 6, 789_123_456, time.FixedZone("x", 3600))
	e := &memory.Engine{Provider: store, Now: func() time.Time { return at }}
	run(t, e, "memory_write", `{"path":"workspace/a","content":"x"}`)
	run(t, e, "memory_edit", `{"path":"workspace/a","old_text":"x","new_text":"y"}`)
	want := time.Date(2031, 2, 3, 3, 5, 6, 789_123_000, time.UTC)
	w := store.calls[0].(*memory.WriteRequest)
	ed := store.calls[1].(*memory.EditRequest)
	for _, got := range []time.Time{w.WrittenAt, ed.WrittenAt} {
		if !got.Equal(want) || got.Location() != time.UTC || got.Nanosecond() != 789_123_000 {
			t.Errorf("store received %v, want %v", got, want)
		}
	}
	// Without a clock the engine uses the real one.
	store.calls = nil
	before := time.Now().Add(-time.Second)
	(&memory.Engine{Provider: store}).Run(t.Context(), "memory_write", json.RawMessage(`{"path":"workspace/a","content":"x"}`), memorytest.DefaultBindings(), memory.RunOptions{})
	if got := store.calls[0].(*memory.WriteRequest).WrittenAt; got.Before(before) || got.After(time.Now()) {
		t.Errorf("default clock wrote %v", got)
	}
}

// TestReplayDelete: a replayed delete that finds the document gone answers as a delete.
func TestReplayDelete(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	input := json.RawMessage(`{"path":"workspace/a"}`)
	res, err := e.Run(t.Context(), "memory_delete", input, memorytest.DefaultBindings(), memory.RunOptions{Replay: true})
	if err != nil || !cmp.Equal(res, ok("Deleted workspace/a.", "deleted")) {
		t.Errorf("replayed delete: %+v, %v", res, err)
	}
	res, _ = e.Run(t.Context(), "memory_delete", input, memorytest.DefaultBindings(), memory.RunOptions{})
	if !cmp.Equal(res, refused("memory_not_found: workspace/a")) {
		t.Errorf("first delete: %+v", res)
	}
	// Replay changes nothing else: a replayed read of a missing document is still not found.
	res, _ = e.Run(t.Context(), "memory_read", input, memorytest.DefaultBindings(), memory.RunOptions{Replay: true})
	if !cmp.Equal(res, refused("memory_not_found: workspace/a")) {
		t.Errorf("replayed read: %+v", res)
	}
}

// TestResolve is the pre-dispatch check the kernel runs before handing a call to a provider.
func TestResolve(t *testing.T) {
	t.Parallel()
	standalone := []memory.Scope{{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: memorytest.OwnerWorkspace, Access: memory.AccessRead}, memorytest.User}
	for _, c := range []struct {
		tool, input  string
		code, detail string
	}{
		{"memory_write", `{"path":"workspace/a","content":"x"}`, "memory_read_only", "workspace/a"},
		{"nexus.memory.edit", `{"path":"workspace/a"}`, "memory_read_only", "workspace/a"},
		{"memory_delete", `{"path":"conversation/a"}`, "memory_scope_unavailable", "conversation/a"},
		{"memory_ls", `{"path":"conversation/"}`, "memory_scope_unavailable", "conversation/"},
		{"memory_grep", `{"path":"team","pattern":"("}`, "memory_scope_unavailable", "team"},
		{"memory_read", `{"path":"team/x\u0002"}`, "memory_path_invalid", "team/x\uFFFD"},
		{"memory_write", `{"path":"workspace/skills/a"}`, "memory_reserved_prefix", "workspace/skills/a"},
		{"memory_read", `{"path":5}`, "memory_path_invalid", ""},
		{"memory_read", `[]`, "memory_path_invalid", ""},
		{"memory_move", `{}`, "memory_unknown_verb", "memory_move"},
		{"memory_read", `{"path":"team/` + string(repeat('t', 130)) + `"}`, "memory_scope_unavailable", "team/" + string(repeat('t', 115))},
		// Resolution alone: input checks that come later are not run.
		{"memory_grep", `{"pattern":"("}`, "", ""},
		{"memory_write", `{"path":"user/a"}`, "", ""},
		{"memory_read", `{"path":"workspace/a"}`, "", ""},
		{"memory_ls", `{}`, "", ""},
	} {
		code, detail, okay := memory.Resolve(c.tool, json.RawMessage(c.input), standalone)
		if code != c.code || detail != c.detail || okay != (c.code == "") {
			t.Errorf("Resolve(%s, %s) = %q, %q, %v; want %q, %q", c.tool, c.input, code, detail, okay, c.code, c.detail)
		}
	}
	dup := []memory.Scope{memorytest.Workspace, memorytest.Workspace}
	if code, detail, okay := memory.Resolve("memory_ls", nil, dup); okay || code != "memory_unavailable" || detail != memory.UnavailableDetail {
		t.Errorf("Resolve with duplicate bindings: %q %q %v", code, detail, okay)
	}
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestGrepAcrossBindings: the engine asks each root for what is still missing, asks with limit
// 0 once the limit is held, and cuts a store that answers more than it was asked.
func TestGrepAcrossBindings(t *testing.T) {
	t.Parallel()
	rec := &limitRecorder{MemStore: memorytest.NewMemStore()}
	e := &memory.Engine{Provider: rec, Now: memorytest.NewClock(memorytest.T0).Now}
	run(t, e, "memory_write", `{"path":"conversation/a","content":"hit\nhit\n"}`)
	run(t, e, "memory_write", `{"path":"workspace/a","content":"hit\n"}`)
	got := run(t, e, "memory_grep", `{"pattern":"hit","limit":2}`)
	if got.Text != "conversation/a:1: hit\nconversation/a:2: hit\n[Result limit reached. Narrow the pattern or raise limit=.]" {
		t.Errorf("grep: %q", got.Text)
	}
	if diff := cmp.Diff([]int{2, 0, 0}, rec.limits); diff != "" {
		t.Errorf("limits asked (-want +got):\n%s", diff)
	}
	rec.limits = nil
	run(t, e, "memory_grep", `{"pattern":"hit","limit":3}`)
	if diff := cmp.Diff([]int{3, 1, 1}, rec.limits); diff != "" {
		t.Errorf("limits asked (-want +got):\n%s", diff)
	}
	over := &memory.Engine{Provider: overAnswer{memorytest.NewMemStore()}}
	if got := run(t, over, "memory_grep", `{"pattern":"x","limit":2}`); got.Text != "conversation/m:1: x\nconversation/m:2: x\n[Result limit reached. Narrow the pattern or raise limit=.]" || got.Title != "2 matches" {
		t.Errorf("store answering more than asked: %+v", got)
	}
}

type limitRecorder struct {
	*memorytest.MemStore
	limits []int
}

func (l *limitRecorder) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	l.limits = append(l.limits, req.Limit)
	return l.MemStore.Grep(ctx, req)
}

// overAnswer answers five matches whatever the limit, with a long unclamped line.
type overAnswer struct{ *memorytest.MemStore }

func (overAnswer) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	var out memory.GrepResponse
	for i := 1; i <= 5; i++ {
		out.Matches = append(out.Matches, memory.Match{Name: "m", LineNumber: i, Text: "x"})
	}
	return &out, nil
}

// TestConcurrentRuns: one Engine serves concurrent calls.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			path := fmt.Sprintf("workspace/doc-%02d", i)
			for _, call := range []struct{ tool, input string }{
				{"memory_write", `{"path":"` + path + `","content":"v1 v1"}`},
				{"memory_edit", `{"path":"` + path + `","old_text":"v1 v1","new_text":"v2"}`},
				{"memory_read", `{"path":"` + path + `"}`},
				{"memory_grep", `{"pattern":"v2"}`},
				{"memory_ls", `{}`},
			} {
				res, err := e.Run(context.Background(), call.tool, json.RawMessage(call.input), memorytest.DefaultBindings(), memory.RunOptions{})
				if err != nil || res.IsError {
					t.Errorf("%s %s: %+v %v", call.tool, path, res, err)
				}
			}
		})
	}
	wg.Wait()
	if got := run(t, e, "memory_grep", `{"pattern":"^v2$","path":"workspace/"}`); got.Title != "16 matches" {
		t.Errorf("after concurrent calls: %s", got.Title)
	}
}
