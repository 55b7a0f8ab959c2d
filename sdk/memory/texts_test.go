package memory_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

// newEngine answers an Engine over a fresh reference store with the kit's fixed clock.
func newEngine(t *testing.T) (*memory.Engine, *memorytest.MemStore, *memorytest.Clock) {
	t.Helper()
	store := memorytest.NewMemStore()
	clock := memorytest.NewClock(memorytest.T0)
	return &memory.Engine{Provider: store, Now: clock.Now}, store, clock
}

func run(t *testing.T, e *memory.Engine, tool, input string) memory.Result {
	t.Helper()
	res, err := e.Run(t.Context(), tool, json.RawMessage(input), memorytest.DefaultBindings(), memory.RunOptions{})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, input, err)
	}
	return res
}

func ok(text, title string) memory.Result { return memory.Result{Text: text, Title: title} }

func refused(text string) memory.Result {
	return memory.Result{Text: text, IsError: true, Title: "memory refused"}
}

// TestResultTexts pins the memory family's result texts, titles and error flags byte for byte
// (docs/agent-tools.md#the-twenty-kernel-tools, memory part): each step runs in order against one
// store.
func TestResultTexts(t *testing.T) {
	t.Parallel()
	e, _, clock := newEngine(t)
	steps := []struct {
		name, tool, input string
		want              memory.Result
	}{
		// ls, empty case
		{"ls empty", "memory_ls", `{}`, ok("No memory documents.", "memory is empty")},
		// write: path as given, stored byte count (multibyte counted in bytes)
		{"write", "memory_write", `{"path":"workspace/plan.md","content":"# Plan\n- ship the retry fix\n\n- retry budget stays at 5\n"}`, ok("Wrote workspace/plan.md (55 bytes).", "wrote workspace/plan.md")},
		{"write multibyte", "memory_write", `{"path":"user/prefs.md","content":"thé 🎉\n"}`, ok("Wrote user/prefs.md (10 bytes).", "wrote user/prefs.md")},
		{"write empty", "memory_write", `{"path":"conversation/empty","content":""}`, ok("Wrote conversation/empty (0 bytes).", "wrote conversation/empty")},
		// ls lines: two-space columns, RFC 3339 seconds in UTC, union order, title without singular
		{"ls lines", "memory_ls", `{}`, ok("conversation/empty  0 bytes  2030-01-15T09:00:00Z\nuser/prefs.md  10 bytes  2030-01-15T09:00:00Z\nworkspace/plan.md  55 bytes  2030-01-15T09:00:00Z", "3 memory documents")},
		{"ls one", "memory_ls", `{"path":"user"}`, ok("user/prefs.md  10 bytes  2030-01-15T09:00:00Z", "1 memory documents")},
		// edit
		{"edit", "memory_edit", `{"path":"workspace/plan.md","old_text":"stays at 5","new_text":"stays at 6"}`, ok("Edited workspace/plan.md.", "edited workspace/plan.md")},
		// grep lines, empty case, truncation line
		{"grep lines", "memory_grep", `{"pattern":"retry"}`, ok("workspace/plan.md:2: - ship the retry fix\nworkspace/plan.md:4: - retry budget stays at 6", "2 matches")},
		{"grep one", "memory_grep", `{"pattern":"thé"}`, ok("user/prefs.md:1: thé 🎉", "1 matches")},
		{"grep truncated", "memory_grep", `{"pattern":"retry","limit":1}`, ok("workspace/plan.md:2: - ship the retry fix\n[Result limit reached. Narrow the pattern or raise limit=.]", "1 matches")},
		{"grep none", "memory_grep", `{"pattern":"absent"}`, ok("No matches found.", "no matches")},
		// read, whole and sliced: footer counts from offset, continues at offset + shown
		{"read whole", "memory_read", `{"path":"workspace/plan.md"}`, ok("# Plan\n- ship the retry fix\n\n- retry budget stays at 6\n", "read workspace/plan.md")},
		{"read limit", "memory_read", `{"path":"workspace/plan.md","limit":2}`, ok("# Plan\n- ship the retry fix\n\n[Showing 2 of 4 lines. Continue with offset=3.]", "read workspace/plan.md")},
		{"read offset limit", "memory_read", `{"path":"workspace/plan.md","offset":2,"limit":1}`, ok("- ship the retry fix\n\n[Showing 1 of 3 lines. Continue with offset=3.]", "read workspace/plan.md")},
		{"read offset to end", "memory_read", `{"path":"workspace/plan.md","offset":3,"limit":2}`, ok("\n- retry budget stays at 6\n", "read workspace/plan.md")},
		{"read past end", "memory_read", `{"path":"workspace/plan.md","offset":5}`, ok("", "read workspace/plan.md")},
		{"read empty document", "memory_read", `{"path":"conversation/empty"}`, ok("", "read conversation/empty")},
		// delete
		{"delete", "memory_delete", `{"path":"conversation/empty"}`, ok("Deleted conversation/empty.", "deleted")},
		// refusals: code, then the path or pattern as given; the code alone when empty
		{"not found", "memory_read", `{"path":"conversation/empty"}`, refused("memory_not_found: conversation/empty")},
		{"empty detail", "memory_read", `{"path":7}`, refused("memory_path_invalid")},
		{"empty pattern detail", "memory_grep", `{"pattern":7}`, refused("memory_pattern_invalid")},
		{"path clipped at 120", "memory_read", `{"path":"team/` + strings.Repeat("é", 120) + `"}`, refused("memory_scope_unavailable: team/" + strings.Repeat("é", 115))},
		{"pattern clipped at 80", "memory_grep", `{"pattern":"(` + strings.Repeat("ü", 90) + `"}`, refused("memory_pattern_invalid: (" + strings.Repeat("ü", 79))},
		{"control characters", "memory_write", `{"path":"workspace/a\u0007b\u001b","content":"x"}`, refused("memory_path_invalid: workspace/a\uFFFDb\uFFFD")},
		{"reserved", "memory_write", `{"path":"workspace/skills/x","content":"x"}`, refused("memory_reserved_prefix: workspace/skills/x")},
		{"unknown verb", "memory_move", `{}`, refused("memory_unknown_verb: memory_move")},
	}
	for _, s := range steps {
		got := run(t, e, s.tool, s.input)
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	// A later write time shows in the listing, cut to the second.
	clock.Set(time.Date(2030, 6, 1, 12, 30, 45, 999_999_999, time.UTC))
	run(t, e, "memory_write", `{"path":"user/prefs.md","content":"x"}`)
	if got := run(t, e, "memory_ls", `{"path":"user/"}`); got.Text != "user/prefs.md  1 bytes  2030-06-01T12:30:45Z" {
		t.Errorf("ls after a later write: %q", got.Text)
	}
}

// TestRefusalClipping checks the clip boundaries for both detail kinds, including the empty
// detail and control characters past the cut.
func TestRefusalClipping(t *testing.T) {
	t.Parallel()
	e, _, _ := newEngine(t)
	for _, c := range []struct {
		name, tool, input, want string
	}{
		{"path of 119", "memory_read", `{"path":"zz/` + strings.Repeat("a", 116) + `"}`, "memory_scope_unavailable: zz/" + strings.Repeat("a", 116)},
		{"path of 120", "memory_read", `{"path":"zz/` + strings.Repeat("a", 117) + `"}`, "memory_scope_unavailable: zz/" + strings.Repeat("a", 117)},
		{"path of 121", "memory_read", `{"path":"zz/` + strings.Repeat("a", 118) + `"}`, "memory_scope_unavailable: zz/" + strings.Repeat("a", 117)},
		{"emoji path", "memory_delete", `{"path":"zz/` + strings.Repeat("🎉", 200) + `"}`, "memory_path_invalid: zz/" + strings.Repeat("🎉", 117)},
		{"control past the cut", "memory_read", `{"path":"zz/` + strings.Repeat("a", 117) + `\u0001"}`, "memory_path_invalid: zz/" + strings.Repeat("a", 117)},
		{"pattern of 80", "memory_grep", `{"pattern":"[` + strings.Repeat("b", 79) + `"}`, "memory_pattern_invalid: [" + strings.Repeat("b", 79)},
		{"pattern of 81", "memory_grep", `{"pattern":"[` + strings.Repeat("b", 80) + `"}`, "memory_pattern_invalid: [" + strings.Repeat("b", 79)},
		{"pattern with tab", "memory_grep", `{"pattern":"(\t"}`, "memory_pattern_invalid: (\uFFFD"},
		{"missing path", "memory_delete", `{"content":"x"}`, "memory_path_invalid"},
		{"null path", "memory_edit", `{"path":null}`, "memory_path_invalid"},
		{"missing pattern", "memory_grep", `{"path":"workspace/"}`, "memory_pattern_invalid"},
		{"empty pattern", "memory_grep", `{"pattern":""}`, "memory_pattern_invalid"},
	} {
		got := run(t, e, c.tool, c.input)
		if diff := cmp.Diff(refused(c.want), got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestReadSlice pins the slicing function the skill tool shares, with the offset arithmetic.
func TestReadSlice(t *testing.T) {
	t.Parallel()
	doc5000 := strings.Repeat("line\n", 5000)
	for _, c := range []struct {
		name          string
		content       string
		offset, limit int64
		want          string
	}{
		{"example", "a\nb\nc\n", 1, 2, "a\nb\n\n[Showing 2 of 3 lines. Continue with offset=3.]"},
		{"whole", "a\nb\nc\n", 1, 2000, "a\nb\nc\n"},
		{"empty", "", 1, 2000, ""},
		{"no final newline", "a\nb", 1, 1, "a\n\n[Showing 1 of 2 lines. Continue with offset=2.]"},
		{"last unterminated line", "a\nb", 2, 1, "b"},
		{"offset below one", "a\nb\nc\n", -5, 1, "a\n\n[Showing 1 of 3 lines. Continue with offset=2.]"},
		{"offset past end", "a\nb\nc\n", 4, 10, ""},
		{"offset far past end", "a\n", 1 << 62, 10, ""},
		{"limit below one", "a\nb\n", 1, 0, "a\n\n[Showing 1 of 2 lines. Continue with offset=2.]"},
		{"limit above max", doc5000, 1, 1 << 40, strings.Repeat("line\n", 2000) + "\n[Showing 2000 of 5000 lines. Continue with offset=2001.]"},
		{"5000 lines from the top", doc5000, 1, 2000, strings.Repeat("line\n", 2000) + "\n[Showing 2000 of 5000 lines. Continue with offset=2001.]"},
		{"5000 lines from 2001", doc5000, 2001, 2000, strings.Repeat("line\n", 2000) + "\n[Showing 2000 of 3000 lines. Continue with offset=4001.]"},
		{"5000 lines from 4001", doc5000, 4001, 2000, strings.Repeat("line\n", 1000)},
		{"blank lines", "\n\n\n", 2, 1, "\n\n[Showing 1 of 2 lines. Continue with offset=3.]"},
		{"crlf kept", "a\r\nb\r\n", 1, 1, "a\r\n\n[Showing 1 of 2 lines. Continue with offset=2.]"},
	} {
		if got := memory.ReadSlice(c.content, c.offset, c.limit); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, clipForLog(got), clipForLog(c.want))
		}
	}
}

func clipForLog(s string) string {
	if len(s) > 120 {
		return s[:60] + "…" + s[len(s)-60:]
	}
	return s
}

// TestRunContextEnded: a call whose context has ended returns the context's error and no
// result, so the caller settles nothing and the expiry rule decides.
func TestRunContextEnded(t *testing.T) {
	t.Parallel()
	e, store, _ := newEngine(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := e.Run(ctx, "memory_write", json.RawMessage(`{"path":"workspace/a","content":"x"}`), memorytest.DefaultBindings(), memory.RunOptions{})
	if err != context.Canceled || !cmp.Equal(res, memory.Result{}) {
		t.Errorf("canceled write: %+v, %v", res, err)
	}
	if _, err := store.Read(t.Context(), &memory.ReadRequest{Scope: memorytest.Workspace, Name: "a"}); err == nil {
		t.Error("a canceled write reached the store")
	}
	// A deadline of the caller's own that passes during a grep is the caller's, not a costly
	// pattern.
	slow := &memory.Engine{Provider: stallingGrep{store}, GrepBudget: time.Hour}
	ctx, cancel = context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	res, err = slow.Run(ctx, "memory_grep", json.RawMessage(`{"pattern":"x"}`), memorytest.DefaultBindings(), memory.RunOptions{})
	if err != context.DeadlineExceeded || !cmp.Equal(res, memory.Result{}) {
		t.Errorf("grep past the caller's deadline: %+v, %v", res, err)
	}
	// The engine's own budget passing is memory_pattern_too_costly, even when the store answers
	// with some other error once its context ends.
	slow = &memory.Engine{Provider: stallingGrep{store}, GrepBudget: 20 * time.Millisecond}
	res, err = slow.Run(t.Context(), "memory_grep", json.RawMessage(`{"pattern":"x+"}`), memorytest.DefaultBindings(), memory.RunOptions{})
	if err != nil || res.Text != "memory_pattern_too_costly: x+" || !res.IsError {
		t.Errorf("grep past the budget: %+v, %v", res, err)
	}
}

// stallingGrep waits for its context to end and then fails with a plain error.
type stallingGrep struct{ *memorytest.MemStore }

func (s stallingGrep) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}
