package memorytest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/memory"
)

func toolCases() []toolCase {
	return []toolCase{
		{"T01", "read_text_and_title", t01Read},
		{"T02", "read_slicing", t02Slicing},
		{"T03", "ls_lines", t03Ls},
		{"T04", "prefix_forms", t04Prefixes},
		{"T05", "union_order", t05UnionOrder},
		{"T06", "grep_lines", t06Grep},
		{"T07", "write_text", t07Write},
		{"T08", "edit_and_delete_text", t08EditDelete},
		{"T09", "refusal_shape", t09RefusalShape},
		{"T10", "path_invalid", t10PathInvalid},
		{"T11", "scope_unavailable", t11ScopeUnavailable},
		{"T12", "read_only", t12ReadOnly},
		{"T13", "reserved_prefix", t13Reserved},
		{"T14", "full", t14Full},
		{"T15", "too_large", t15TooLarge},
		{"T16", "content_invalid", t16ContentInvalid},
		{"T17", "edit_refusals", t17EditRefusals},
		{"T18", "not_found", t18NotFound},
		{"T19", "pattern_refusals", t19Pattern},
		{"T20", "integer_inputs", t20Integers},
		{"T21", "bidi_controls", t21BidiControls},
	}
}

func t01Read(t *testing.T, h *harness) {
	h.write("workspace/notes.md", "line one\nline two\n")
	h.expect(memory.ToolRead, `{"path":"workspace/notes.md"}`, done("line one\nline two\n", "read workspace/notes.md"))
	h.write("user/日本語 メモ.md", "ユーザー")
	h.expect(memory.ToolRead, obj("path", "user/日本語 メモ.md"), done("ユーザー", "read user/日本語 メモ.md"))
	h.write("conversation/empty", "")
	h.expect(memory.ToolRead, `{"path":"conversation/empty"}`, done("", "read conversation/empty"))
	// Canonical spelling and extra keys change nothing.
	h.expect("nexus.memory.read", `{"path":"workspace/notes.md","mode":"fast"}`, done("line one\nline two\n", "read workspace/notes.md"))
}

func t02Slicing(t *testing.T, h *harness) {
	h.write("workspace/five", "l1\nl2\nl3\nl4\nl5\n")
	h.write("workspace/open", "a\nb\nc")
	h.write("workspace/long", strings.Repeat("x\n", 2001))
	read := func(path, extra string) string { return `{"path":"` + path + `"` + extra + `}` }
	for _, c := range []struct {
		path, extra, want string
	}{
		{"five", ``, "l1\nl2\nl3\nl4\nl5\n"},
		{"five", `,"limit":2`, "l1\nl2\n\n[Showing 2 of 5 lines. Continue with offset=3.]"},
		{"five", `,"offset":2,"limit":2`, "l2\nl3\n\n[Showing 2 of 4 lines. Continue with offset=4.]"},
		{"five", `,"offset":3,"limit":1`, "l3\n\n[Showing 1 of 3 lines. Continue with offset=4.]"},
		{"five", `,"offset":4,"limit":2`, "l4\nl5\n"},
		{"five", `,"offset":5`, "l5\n"},
		{"five", `,"offset":6`, ""},
		{"five", `,"offset":1000000`, ""},
		{"five", `,"offset":0,"limit":2`, "l1\nl2\n\n[Showing 2 of 5 lines. Continue with offset=3.]"},
		{"five", `,"offset":-3,"limit":2`, "l1\nl2\n\n[Showing 2 of 5 lines. Continue with offset=3.]"},
		{"five", `,"limit":0`, "l1\n\n[Showing 1 of 5 lines. Continue with offset=2.]"},
		{"five", `,"limit":-7`, "l1\n\n[Showing 1 of 5 lines. Continue with offset=2.]"},
		{"five", `,"limit":5000`, "l1\nl2\nl3\nl4\nl5\n"},
		{"open", `,"limit":2`, "a\nb\n\n[Showing 2 of 3 lines. Continue with offset=3.]"},
		{"open", `,"offset":3`, "c"},
		{"open", `,"offset":2,"limit":1`, "b\n\n[Showing 1 of 2 lines. Continue with offset=3.]"},
		{"long", ``, strings.Repeat("x\n", 2000) + "\n[Showing 2000 of 2001 lines. Continue with offset=2001.]"},
		{"long", `,"offset":2001`, "x\n"},
		{"long", `,"offset":2,"limit":9999`, strings.Repeat("x\n", 2000)},
		{"long", `,"offset":1,"limit":2001`, strings.Repeat("x\n", 2000) + "\n[Showing 2000 of 2001 lines. Continue with offset=2001.]"},
	} {
		path := "workspace/" + c.path
		h.expect(memory.ToolRead, read(path, c.extra), done(c.want, "read "+path))
	}
}

func t03Ls(t *testing.T, h *harness) {
	h.expect(memory.ToolLs, `{}`, done("No memory documents.", "memory is empty"))
	h.clock.Set(time.Date(2030, 1, 15, 9, 0, 0, 999999000, time.UTC)) // seconds are cut, never rounded
	h.write("workspace/plan.md", strings.Repeat("p", 1840))
	h.expect(memory.ToolLs, `{}`, done("workspace/plan.md  1840 bytes  2030-01-15T09:00:00Z", "1 memory documents"))
	h.clock.Set(time.Date(2030, 1, 14, 18, 2, 11, 0, time.FixedZone("EST", -5*3600)))
	h.write("user/prefs.md", strings.Repeat("é", 106))
	h.write("workspace/empty.md", "")
	h.expect(memory.ToolLs, `{}`, done(
		"user/prefs.md  212 bytes  2030-01-14T23:02:11Z\n"+
			"workspace/empty.md  0 bytes  2030-01-14T23:02:11Z\n"+
			"workspace/plan.md  1840 bytes  2030-01-15T09:00:00Z",
		"3 memory documents"))
	h.expect(memory.ToolLs, `{"path":"conversation/"}`, done("No memory documents.", "memory is empty"))
}

func t04Prefixes(t *testing.T, h *harness) {
	h.write("workspace/notes.md", "1")
	h.write("workspace/no/x", "22")
	h.write("workspace/other.md", "333")
	h.write("user/notes.md", "4444")
	at := "  2030-01-15T09:00:00Z"
	all := "user/notes.md  4 bytes" + at + "\nworkspace/no/x  2 bytes" + at + "\nworkspace/notes.md  1 bytes" + at + "\nworkspace/other.md  3 bytes" + at
	ws := "workspace/no/x  2 bytes" + at + "\nworkspace/notes.md  1 bytes" + at + "\nworkspace/other.md  3 bytes" + at
	for _, c := range []struct {
		input string
		want  memory.Result
	}{
		{`{}`, done(all, "4 memory documents")},
		{`{"path":null}`, done(all, "4 memory documents")},
		{`{"path":""}`, done(all, "4 memory documents")},
		{`{"path":"workspace"}`, done(ws, "3 memory documents")},
		{`{"path":"workspace/"}`, done(ws, "3 memory documents")},
		{`{"path":"workspace/no"}`, done("workspace/no/x  2 bytes"+at+"\nworkspace/notes.md  1 bytes"+at, "2 memory documents")},
		{`{"path":"workspace/no/"}`, done("workspace/no/x  2 bytes"+at, "1 memory documents")},
		{`{"path":"workspace/zzz"}`, done("No memory documents.", "memory is empty")},
		{`{"path":"workspace/../x"}`, done("No memory documents.", "memory is empty")},
		{`{"path":"workspace/a//%_\\"}`, done("No memory documents.", "memory is empty")},
		{`{"path":"team"}`, refusedText("memory_scope_unavailable: team")},
		{`{"path":"team/notes"}`, refusedText("memory_scope_unavailable: team/notes")},
		{`{"path":"/notes"}`, refusedText("memory_scope_unavailable: /notes")},
		{`{"path":"Workspace/"}`, refusedText("memory_scope_unavailable: Workspace/")},
		{`{"path":5}`, refusedText("memory_path_invalid")},
		{`{"path":["workspace"]}`, refusedText("memory_path_invalid")},
	} {
		h.expect(memory.ToolLs, c.input, c.want)
	}
	// grep resolves its prefix the same way.
	h.expect(memory.ToolGrep, `{"pattern":"\\d","path":"workspace/no"}`, done("workspace/no/x:1: 22\nworkspace/notes.md:1: 1", "2 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"\\d","path":"team/"}`, refusedText("memory_scope_unavailable: team/"))
	h.expect(memory.ToolGrep, `{"pattern":"\\d","path":false}`, refusedText("memory_path_invalid"))
	// With no bindings at all, an empty prefix lists and finds nothing.
	h.expectWith(nil, memory.ToolLs, `{}`, done("No memory documents.", "memory is empty"))
	h.expectWith(nil, memory.ToolGrep, `{"pattern":"x"}`, done("No matches found.", "no matches"))
	h.expectWith(nil, memory.ToolLs, `{"path":"workspace/"}`, refusedText("memory_scope_unavailable: workspace/"))
}

func t05UnionOrder(t *testing.T, h *harness) {
	h.write("workspace/b", "topic")
	h.write("workspace/a", "topic")
	h.write("user/z", "topic")
	h.write("conversation/y", "topic")
	at := "  5 bytes  2030-01-15T09:00:00Z"
	h.expect(memory.ToolLs, `{}`, done("conversation/y"+at+"\nuser/z"+at+"\nworkspace/a"+at+"\nworkspace/b"+at, "4 memory documents"))
	h.expect(memory.ToolGrep, `{"pattern":"topic"}`, done("conversation/y:1: topic\nuser/z:1: topic\nworkspace/a:1: topic\nworkspace/b:1: topic", "4 matches"))
	// A limit that falls between roots still reports the matches beyond it.
	h.expect(memory.ToolGrep, `{"pattern":"topic","limit":1}`, done("conversation/y:1: topic\n[Result limit reached. Narrow the pattern or raise limit=.]", "1 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"topic","limit":2}`, done("conversation/y:1: topic\nuser/z:1: topic\n[Result limit reached. Narrow the pattern or raise limit=.]", "2 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"topic","limit":4}`, done("conversation/y:1: topic\nuser/z:1: topic\nworkspace/a:1: topic\nworkspace/b:1: topic", "4 matches"))
	// The order is the roots' names, whatever order the bindings come in; a root named "team"
	// onto the workspace anchor sorts between user and workspace.
	team := Workspace
	team.Binding = "team"
	h.expectWith([]memory.Scope{Workspace, team, User}, memory.ToolLs, `{}`, done("team/a"+at+"\nteam/b"+at+"\nuser/z"+at+"\nworkspace/a"+at+"\nworkspace/b"+at, "5 memory documents"))
}

func t06Grep(t *testing.T, h *harness) {
	h.write("workspace/plan.md", "# Plan\n\n- ship the retry fix\nnotes\r\n\n\n\n\n- retry budget stays at 5\n")
	h.expect(memory.ToolGrep, `{"pattern":"retry"}`, done("workspace/plan.md:3: - ship the retry fix\nworkspace/plan.md:9: - retry budget stays at 5", "2 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"^notes$"}`, done("workspace/plan.md:4: notes", "1 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"RETRY"}`, done("No matches found.", "no matches"))
	h.expect(memory.ToolGrep, `{"pattern":"RETRY","ignore_case":true}`, done("workspace/plan.md:3: - ship the retry fix\nworkspace/plan.md:9: - retry budget stays at 5", "2 matches"))
	for _, notTrue := range []string{`"true"`, `1`, `null`, `false`} {
		h.expect(memory.ToolGrep, `{"pattern":"RETRY","ignore_case":`+notTrue+`}`, done("No matches found.", "no matches"))
	}
	h.expect(memory.ToolGrep, `{"pattern":"retry","limit":1}`, done("workspace/plan.md:3: - ship the retry fix\n[Result limit reached. Narrow the pattern or raise limit=.]", "1 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"retry","limit":2}`, done("workspace/plan.md:3: - ship the retry fix\nworkspace/plan.md:9: - retry budget stays at 5", "2 matches"))
	// A clamped line keeps 500 characters and ends with "…".
	long := strings.Repeat("é", 499) + "xyz"
	h.write("user/long", "hit "+long+"\n"+"hit "+strings.Repeat("a", 496)+"\n")
	h.expect(memory.ToolGrep, `{"pattern":"^hit","path":"user/"}`, done(
		"user/long:1: hit "+strings.Repeat("é", 496)+"…\nuser/long:2: hit "+strings.Repeat("a", 496), "2 matches"))
	// A limit of 500 lines across more matches truncates at 500.
	var many strings.Builder
	for range 501 {
		many.WriteString("m\n")
	}
	h.write("conversation/many", many.String())
	res := h.call(memory.ToolGrep, `{"pattern":"^m$","limit":500}`)
	lines := strings.Split(res.Text, "\n")
	if res.Title != "500 matches" || len(lines) != 501 || lines[499] != "conversation/many:500: m" || lines[500] != "[Result limit reached. Narrow the pattern or raise limit=.]" {
		t.Errorf("grep limit 500: title %q, %d lines, last %q", res.Title, len(lines), lines[len(lines)-1])
	}
	res = h.call(memory.ToolGrep, `{"pattern":"^m$"}`)
	if lines := strings.Split(res.Text, "\n"); res.Title != "100 matches" || len(lines) != 101 {
		t.Errorf("grep default limit: title %q, %d lines", res.Title, len(lines))
	}
	res = h.call(memory.ToolGrep, `{"pattern":"^m$","limit":100000}`)
	if res.Title != "500 matches" {
		t.Errorf("grep limit over 500: title %q", res.Title)
	}
}

func t07Write(t *testing.T, h *harness) {
	h.expect(memory.ToolWrite, obj("path", "workspace/ünïcode.md", "content", "héllo 🎉"), done("Wrote workspace/ünïcode.md (11 bytes).", "wrote workspace/ünïcode.md"))
	h.expect(memory.ToolWrite, obj("path", "workspace/ünïcode.md", "content", "日本"), done("Wrote workspace/ünïcode.md (6 bytes).", "wrote workspace/ünïcode.md"))
	h.expect(memory.ToolWrite, obj("path", "conversation/empty", "content", ""), done("Wrote conversation/empty (0 bytes).", "wrote conversation/empty"))
	h.expect(memory.ToolWrite, obj("path", "user/a b/c d", "content", "x", "extra", 1), done("Wrote user/a b/c d (1 bytes).", "wrote user/a b/c d"))
	h.expect(memory.ToolRead, obj("path", "workspace/ünïcode.md"), done("日本", "read workspace/ünïcode.md"))
	// "skills" inside a longer first segment is not reserved.
	h.expect(memory.ToolWrite, obj("path", "workspace/skillset", "content", "x"), done("Wrote workspace/skillset (1 bytes).", "wrote workspace/skillset"))
	h.expect(memory.ToolWrite, obj("path", "workspace/notes/skills/x", "content", "x"), done("Wrote workspace/notes/skills/x (1 bytes).", "wrote workspace/notes/skills/x"))
}

func t08EditDelete(t *testing.T, h *harness) {
	h.write("workspace/a.md", "alpha\nbeta\n")
	h.expect(memory.ToolEdit, obj("path", "workspace/a.md", "old_text", "beta", "new_text", "gamma"), done("Edited workspace/a.md.", "edited workspace/a.md"))
	h.expect(memory.ToolRead, `{"path":"workspace/a.md"}`, done("alpha\ngamma\n", "read workspace/a.md"))
	h.expect(memory.ToolEdit, obj("path", "workspace/a.md", "old_text", "alpha\n", "new_text", ""), done("Edited workspace/a.md.", "edited workspace/a.md"))
	h.expect(memory.ToolRead, `{"path":"workspace/a.md"}`, done("gamma\n", "read workspace/a.md"))
	h.expect(memory.ToolDelete, `{"path":"workspace/a.md"}`, done("Deleted workspace/a.md.", "deleted"))
	h.expect(memory.ToolRead, `{"path":"workspace/a.md"}`, refusedText("memory_not_found: workspace/a.md"))
	h.expect(memory.ToolLs, `{}`, done("No memory documents.", "memory is empty"))
}

func t09RefusalShape(t *testing.T, h *harness) {
	// 130 characters, many of them multibyte: clipping counts characters, not bytes.
	long := "team/" + strings.Repeat("ü", 60) + strings.Repeat("x", 65)
	h.expect(memory.ToolRead, obj("path", long), refusedText("memory_scope_unavailable: "+long[:len("team/")+60*2+55]))
	exactly := "team/" + strings.Repeat("y", 115)
	h.expect(memory.ToolRead, obj("path", exactly), refusedText("memory_scope_unavailable: "+exactly))
	h.expect(memory.ToolRead, obj("path", exactly+"z"), refusedText("memory_scope_unavailable: "+exactly))
	// Patterns clip at 80 characters.
	pattern := "(" + strings.Repeat("ab", 50)
	h.expect(memory.ToolGrep, obj("pattern", pattern), refusedText("memory_pattern_invalid: "+pattern[:80]))
	patternExact := "(" + strings.Repeat("c", 79)
	h.expect(memory.ToolGrep, obj("pattern", patternExact), refusedText("memory_pattern_invalid: "+patternExact))
	// C0 control characters become U+FFFD, inside the clipped part only; DEL and C1 stay.
	h.expect(memory.ToolRead, obj("path", "workspace/a\tb\x00c\x1f"), refusedText("memory_path_invalid: workspace/a\uFFFDb\uFFFDc\uFFFD"))
	h.expect(memory.ToolRead, obj("path", "workspace/\u0085\x7f"), refusedText("memory_path_invalid: workspace/\u0085\x7f"))
	h.expect(memory.ToolRead, obj("path", "team/\n"+strings.Repeat("q", 200)), refusedText("memory_path_invalid: team/\uFFFD"+strings.Repeat("q", 114)))
	h.expect(memory.ToolGrep, obj("pattern", "(\r\n"), refusedText("memory_pattern_invalid: (\uFFFD\uFFFD"))
	// An empty detail leaves the code alone.
	h.expect(memory.ToolRead, `{}`, refusedText("memory_path_invalid"))
	h.expect(memory.ToolRead, `{"path":""}`, refusedText("memory_path_invalid"))
	h.expect(memory.ToolGrep, `{"pattern":""}`, refusedText("memory_pattern_invalid"))
	// Unknown verbs name the tool.
	h.expect("memory_move", `{"path":"workspace/a"}`, refusedText("memory_unknown_verb: memory_move"))
	h.expect("nexus.memory.move", `{}`, refusedText("memory_unknown_verb: nexus.memory.move"))
}

func t10PathInvalid(t *testing.T, h *harness) {
	for _, input := range []string{`{}`, `{"path":null}`, `{"path":5}`, `{"path":true}`, `{"path":{}}`, `{"path":["workspace/a"]}`, `{"path":""}`} {
		for _, tool := range []string{memory.ToolRead, memory.ToolWrite, memory.ToolEdit, memory.ToolDelete} {
			h.expect(tool, input, refusedText("memory_path_invalid"))
		}
	}
	name255 := strings.Repeat("n", 255)
	name256 := strings.Repeat("n", 256)
	for _, path := range []string{
		"workspace", "workspace/", "workspace//a", "workspace/a//b", "workspace/a/", "workspace/.", "workspace/..",
		"workspace/./a", "workspace/a/../b", "workspace/a\x01", "workspace/a\\b", "workspace/a\x7f", "workspace/" + name256,
		"no-slash-at-all",
	} {
		want := refusedText("memory_path_invalid: " + clipChars(strings.NewReplacer("\x01", "\uFFFD").Replace(path), 120))
		for _, tool := range []string{memory.ToolRead, memory.ToolDelete} {
			h.expect(tool, obj("path", path), want)
		}
		h.expect(memory.ToolWrite, obj("path", path, "content", "x"), want)
		h.expect(memory.ToolEdit, obj("path", path, "old_text", "x", "new_text", "y"), want)
	}
	// The name grammar is checked before the root: an invalid name under an unbound root is
	// memory_path_invalid.
	h.expect(memory.ToolRead, `{"path":"team/a//b"}`, refusedText("memory_path_invalid: team/a//b"))
	h.expect(memory.ToolWrite, obj("path", "workspace/"+name255, "content", "x"), done("Wrote workspace/"+name255+" (1 bytes).", "wrote workspace/"+name255))
	h.expect(memory.ToolLs, `{}`, done("workspace/"+name255+"  1 bytes  2030-01-15T09:00:00Z", "1 memory documents"))
}

// t21BidiControls: a path holding a bidirectional control is memory_path_invalid on every verb
// that names a document, whichever provider stores it, and the refusal's detail shows each such
// control as U+FFFD; the emoji joiner U+200D is an ordinary character.
func t21BidiControls(t *testing.T, h *harness) {
	for _, c := range []rune{0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C} {
		path := "workspace/invoice" + string(c) + "gpj.exe"
		want := refusedText("memory_path_invalid: workspace/invoice\uFFFDgpj.exe")
		h.expect(memory.ToolWrite, obj("path", path, "content", "x"), want)
		h.expect(memory.ToolRead, obj("path", path), want)
		h.expect(memory.ToolEdit, obj("path", path, "old_text", "x", "new_text", "y"), want)
		h.expect(memory.ToolDelete, obj("path", path), want)
	}
	h.expect(memory.ToolLs, `{}`, done("No memory documents.", "memory is empty"))
	joined := "workspace/family \U0001F468\u200D\U0001F469.md"
	h.expect(memory.ToolWrite, obj("path", joined, "content", "x"), done("Wrote "+joined+" (1 bytes).", "wrote "+joined))
	h.expect(memory.ToolRead, obj("path", joined), done("x", "read "+joined))
}

func clipChars(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}

func t11ScopeUnavailable(t *testing.T, h *harness) {
	standalone := []memory.Scope{Workspace, User} // a standalone run binds no conversation
	for _, c := range []struct{ tool, input, want string }{
		{memory.ToolRead, `{"path":"conversation/x"}`, "memory_scope_unavailable: conversation/x"},
		{memory.ToolWrite, `{"path":"conversation/x","content":"y"}`, "memory_scope_unavailable: conversation/x"},
		{memory.ToolEdit, `{"path":"conversation/x","old_text":"a","new_text":"b"}`, "memory_scope_unavailable: conversation/x"},
		{memory.ToolDelete, `{"path":"conversation/x"}`, "memory_scope_unavailable: conversation/x"},
		{memory.ToolLs, `{"path":"conversation/"}`, "memory_scope_unavailable: conversation/"},
		{memory.ToolGrep, `{"pattern":"x","path":"conversation"}`, "memory_scope_unavailable: conversation"},
		{memory.ToolRead, `{"path":"team/notes.md"}`, "memory_scope_unavailable: team/notes.md"},
		{memory.ToolWrite, `{"path":"/x","content":"y"}`, "memory_scope_unavailable: /x"},
		{memory.ToolWrite, `{"path":"WORKSPACE/x","content":"y"}`, "memory_scope_unavailable: WORKSPACE/x"},
		// Resolution comes before the content check.
		{memory.ToolWrite, `{"path":"team/x","content":5}`, "memory_scope_unavailable: team/x"},
	} {
		h.expectWith(standalone, c.tool, c.input, refusedText(c.want))
	}
	h.expectWith(standalone, memory.ToolLs, `{}`, done("No memory documents.", "memory is empty"))
}

func t12ReadOnly(t *testing.T, h *harness) {
	h.write("workspace/doc", "original\n")
	ro := []memory.Scope{readOnly(Workspace), User}
	h.expectWith(ro, memory.ToolWrite, `{"path":"workspace/doc","content":"x"}`, refusedText("memory_read_only: workspace/doc"))
	h.expectWith(ro, memory.ToolWrite, `{"path":"workspace/new","content":"x"}`, refusedText("memory_read_only: workspace/new"))
	h.expectWith(ro, memory.ToolEdit, `{"path":"workspace/doc","old_text":"original","new_text":"x"}`, refusedText("memory_read_only: workspace/doc"))
	h.expectWith(ro, memory.ToolDelete, `{"path":"workspace/doc"}`, refusedText("memory_read_only: workspace/doc"))
	h.expectWith(ro, memory.ToolDelete, `{"path":"workspace/missing"}`, refusedText("memory_read_only: workspace/missing"))
	// Read-only comes before the input's own checks.
	h.expectWith(ro, memory.ToolWrite, `{"path":"workspace/doc"}`, refusedText("memory_read_only: workspace/doc"))
	h.expectWith(ro, memory.ToolEdit, `{"path":"workspace/doc"}`, refusedText("memory_read_only: workspace/doc"))
	h.expectWith(ro, memory.ToolRead, `{"path":"workspace/doc"}`, done("original\n", "read workspace/doc"))
	h.expectWith(ro, memory.ToolLs, `{}`, done("workspace/doc  9 bytes  2030-01-15T09:00:00Z", "1 memory documents"))
	h.expectWith(ro, memory.ToolGrep, `{"pattern":"orig"}`, done("workspace/doc:1: original", "1 matches"))
	h.expectWith(ro, memory.ToolWrite, `{"path":"user/x","content":"ok"}`, done("Wrote user/x (2 bytes).", "wrote user/x"))
	h.expect(memory.ToolRead, `{"path":"workspace/doc"}`, done("original\n", "read workspace/doc"))
}

func t13Reserved(t *testing.T, h *harness) {
	// Skill documents are written by member doors, which reach the store directly.
	if _, err := h.p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "skills/release-notes", Content: "How we write release notes.\n", WrittenAt: T0}); err != nil {
		t.Fatalf("store write of a skill document: %v", err)
	}
	ro := []memory.Scope{readOnly(Workspace), User}
	for _, path := range []string{"workspace/skills", "workspace/skills/x", "workspace/skills/release-notes", "workspace/skills/a/b", "workspace/skills//x", "workspace/skills/..", "team/skills/x", "conversation/skills/x", "x/skills"} {
		want := refusedText("memory_reserved_prefix: " + path)
		h.expect(memory.ToolWrite, obj("path", path, "content", "x"), want)
		h.expect(memory.ToolWrite, obj("path", path), want)
		h.expect(memory.ToolEdit, obj("path", path, "old_text", "How", "new_text", "Why"), want)
		h.expect(memory.ToolEdit, obj("path", path), want)
		h.expect(memory.ToolDelete, obj("path", path), want)
		h.expectWith(ro, memory.ToolDelete, obj("path", path), want)
		h.expectWith(nil, memory.ToolDelete, obj("path", path), want)
	}
	h.expect(memory.ToolRead, `{"path":"workspace/skills/release-notes"}`, done("How we write release notes.\n", "read workspace/skills/release-notes"))
	h.expect(memory.ToolRead, `{"path":"workspace/skills"}`, refusedText("memory_not_found: workspace/skills"))
	h.expect(memory.ToolLs, `{"path":"workspace/skills/"}`, done("workspace/skills/release-notes  28 bytes  2030-01-15T09:00:00Z", "1 memory documents"))
	h.expect(memory.ToolGrep, `{"pattern":"release"}`, done("workspace/skills/release-notes:1: How we write release notes.", "1 matches"))
	h.expect(memory.ToolRead, `{"path":"workspace/skills/release-notes"}`, done("How we write release notes.\n", "read workspace/skills/release-notes"))
}

func t14Full(t *testing.T, h *harness) {
	for i := range memory.MaxDocumentsPerAnchor {
		h.write("user/"+docName(i), "x")
	}
	h.expect(memory.ToolWrite, `{"path":"user/one-more","content":"x"}`, refusedText("memory_full: user/one-more"))
	h.expect(memory.ToolWrite, `{"path":"user/doc-010","content":"replaced"}`, done("Wrote user/doc-010 (8 bytes).", "wrote user/doc-010"))
	h.expect(memory.ToolWrite, `{"path":"workspace/one-more","content":"x"}`, done("Wrote workspace/one-more (1 bytes).", "wrote workspace/one-more"))
	h.expect(memory.ToolDelete, `{"path":"user/doc-000"}`, done("Deleted user/doc-000.", "deleted"))
	h.expect(memory.ToolWrite, `{"path":"user/one-more","content":"x"}`, done("Wrote user/one-more (1 bytes).", "wrote user/one-more"))
	if res := h.call(memory.ToolLs, `{"path":"user/"}`); res.Title != "64 memory documents" {
		t.Errorf("ls title %q", res.Title)
	}
}

func t15TooLarge(t *testing.T, h *harness) {
	exact := strings.Repeat("a", memory.MaxDocumentBytes)
	h.expect(memory.ToolWrite, obj("path", "workspace/big", "content", exact), done("Wrote workspace/big (65536 bytes).", "wrote workspace/big"))
	h.expect(memory.ToolWrite, obj("path", "workspace/big", "content", exact+"a"), refusedText("memory_document_too_large: workspace/big"))
	h.expect(memory.ToolWrite, obj("path", "workspace/new", "content", strings.Repeat("é", memory.MaxDocumentBytes/2)+"a"), refusedText("memory_document_too_large: workspace/new"))
	h.expect(memory.ToolEdit, obj("path", "workspace/big", "old_text", "a", "new_text", "b"), refusedText("memory_edit_ambiguous: workspace/big"))
	h.write("workspace/grow", strings.Repeat("a", memory.MaxDocumentBytes-3)+"end")
	h.expect(memory.ToolEdit, obj("path", "workspace/grow", "old_text", "end", "new_text", "ends"), refusedText("memory_document_too_large: workspace/grow"))
	h.expect(memory.ToolEdit, obj("path", "workspace/grow", "old_text", "end", "new_text", "END"), done("Edited workspace/grow.", "edited workspace/grow"))
	if res := h.call(memory.ToolLs, `{"path":"workspace/"}`); !strings.Contains(res.Text, "workspace/big  65536 bytes") || !strings.Contains(res.Text, "workspace/grow  65536 bytes") {
		t.Errorf("ls after refusals: %s", res.Text)
	}
	h.expect(memory.ToolRead, `{"path":"workspace/new"}`, refusedText("memory_not_found: workspace/new"))
}

func t16ContentInvalid(t *testing.T, h *harness) {
	for _, input := range []string{
		`{"path":"workspace/a.md"}`, `{"path":"workspace/a.md","content":null}`, `{"path":"workspace/a.md","content":5}`,
		`{"path":"workspace/a.md","content":["x"]}`, `{"path":"workspace/a.md","content":"a\u0000b"}`,
	} {
		h.expect(memory.ToolWrite, input, refusedText("memory_content_invalid: workspace/a.md"))
	}
	h.expect(memory.ToolRead, `{"path":"workspace/a.md"}`, refusedText("memory_not_found: workspace/a.md"))
	h.write("workspace/a.md", "keep")
	h.expect(memory.ToolEdit, `{"path":"workspace/a.md","old_text":"keep","new_text":"x\u0000"}`, refusedText("memory_content_invalid: workspace/a.md"))
	// An oversized content with U+0000 is content_invalid: that check comes first.
	h.expect(memory.ToolWrite, obj("path", "workspace/a.md", "content", strings.Repeat("z", memory.MaxDocumentBytes)+"\x00"), refusedText("memory_content_invalid: workspace/a.md"))
	h.expect(memory.ToolRead, `{"path":"workspace/a.md"}`, done("keep", "read workspace/a.md"))
}

func t17EditRefusals(t *testing.T, h *harness) {
	h.write("workspace/a.md", "one two two aaa")
	for _, input := range []string{
		`{"path":"workspace/a.md","new_text":"x"}`,
		`{"path":"workspace/a.md","old_text":"","new_text":"x"}`,
		`{"path":"workspace/a.md","old_text":null,"new_text":"x"}`,
		`{"path":"workspace/a.md","old_text":5,"new_text":"x"}`,
		`{"path":"workspace/a.md","old_text":"one"}`,
		`{"path":"workspace/a.md","old_text":"one","new_text":null}`,
		`{"path":"workspace/a.md","old_text":"one","new_text":7}`,
		// edit_invalid is checked before the document is looked up.
		`{"path":"workspace/missing","old_text":"","new_text":"x"}`,
	} {
		path := "workspace/a.md"
		if strings.Contains(input, "missing") {
			path = "workspace/missing"
		}
		h.expect(memory.ToolEdit, input, refusedText("memory_edit_invalid: "+path))
	}
	h.expect(memory.ToolEdit, `{"path":"workspace/a.md","old_text":"three","new_text":"x"}`, refusedText("memory_edit_not_found: workspace/a.md"))
	h.expect(memory.ToolEdit, `{"path":"workspace/a.md","old_text":"t.o","new_text":"x"}`, refusedText("memory_edit_not_found: workspace/a.md"))
	h.expect(memory.ToolEdit, `{"path":"workspace/a.md","old_text":"two","new_text":"x"}`, refusedText("memory_edit_ambiguous: workspace/a.md"))
	h.expect(memory.ToolEdit, `{"path":"workspace/a.md","old_text":"aa","new_text":"x"}`, refusedText("memory_edit_ambiguous: workspace/a.md"))
	h.expect(memory.ToolRead, `{"path":"workspace/a.md"}`, done("one two two aaa", "read workspace/a.md"))
	h.expect(memory.ToolEdit, `{"path":"workspace/a.md","old_text":"aaa","new_text":""}`, done("Edited workspace/a.md.", "edited workspace/a.md"))
	h.expect(memory.ToolRead, `{"path":"workspace/a.md"}`, done("one two two ", "read workspace/a.md"))
}

func t18NotFound(t *testing.T, h *harness) {
	h.write("workspace/present", "x")
	h.expect(memory.ToolRead, `{"path":"workspace/missing"}`, refusedText("memory_not_found: workspace/missing"))
	h.expect(memory.ToolEdit, `{"path":"workspace/missing","old_text":"a","new_text":"b"}`, refusedText("memory_not_found: workspace/missing"))
	h.expect(memory.ToolDelete, `{"path":"workspace/missing"}`, refusedText("memory_not_found: workspace/missing"))
	h.expect(memory.ToolRead, `{"path":"user/present"}`, refusedText("memory_not_found: user/present"))
	h.expect(memory.ToolDelete, `{"path":"workspace/present"}`, done("Deleted workspace/present.", "deleted"))
	h.expect(memory.ToolDelete, `{"path":"workspace/present"}`, refusedText("memory_not_found: workspace/present"))
}

func t19Pattern(t *testing.T, h *harness) {
	h.write("workspace/doc", "needle\n")
	for _, c := range []struct{ input, want string }{
		{`{}`, "memory_pattern_invalid"},
		{`{"pattern":null}`, "memory_pattern_invalid"},
		{`{"pattern":5}`, "memory_pattern_invalid"},
		{`{"pattern":["x"]}`, "memory_pattern_invalid"},
		{`{"pattern":""}`, "memory_pattern_invalid"},
		{`{"pattern":"("}`, "memory_pattern_invalid: ("},
		{`{"pattern":"\\1"}`, `memory_pattern_invalid: \1`},
		{`{"pattern":"a{2,1}"}`, "memory_pattern_invalid: a{2,1}"},
		{`{"pattern":"(?<name>x"}`, "memory_pattern_invalid: (?<name>x"},
		{`{"pattern":"(","ignore_case":true}`, "memory_pattern_invalid: ("},
		// The prefix resolves first.
		{`{"pattern":"(","path":"team/"}`, "memory_scope_unavailable: team/"},
	} {
		h.expect(memory.ToolGrep, c.input, refusedText(c.want))
	}
	// The engine's budget forced small: the search cannot finish inside it.
	costly := &memory.Engine{Provider: h.p, Now: h.clock.Now, GrepBudget: time.Nanosecond}
	res, err := costly.Run(t.Context(), memory.ToolGrep, []byte(`{"pattern":"need(le)?"}`), h.bindings, memory.RunOptions{})
	if err != nil {
		t.Fatalf("grep with a spent budget: Run error %v", err)
	}
	if diff := cmp.Diff(refusedText("memory_pattern_too_costly: need(le)?"), res); diff != "" {
		t.Errorf("grep with a spent budget (-want +got):\n%s", diff)
	}
	long := strings.Repeat("p", 100)
	res, _ = costly.Run(t.Context(), memory.ToolGrep, []byte(obj("pattern", long)), h.bindings, memory.RunOptions{})
	if res.Text != "memory_pattern_too_costly: "+long[:80] {
		t.Errorf("too costly with a long pattern: %q", res.Text)
	}
}

func t20Integers(t *testing.T, h *harness) {
	h.write("workspace/five", "l1\nl2\nl3\nl4\nl5\n")
	two := "l1\nl2\n\n[Showing 2 of 5 lines. Continue with offset=3.]"
	for _, limit := range []string{`2`, `2.0`, `2e0`, `0.2e1`, `2.000`} {
		h.expect(memory.ToolRead, `{"path":"workspace/five","limit":`+limit+`}`, done(two, "read workspace/five"))
	}
	for _, limit := range []string{`"2"`, `2.5`, `true`, `null`, `[2]`, `{"n":2}`, `2.0000000000000000001`} {
		h.expect(memory.ToolRead, `{"path":"workspace/five","limit":`+limit+`}`, done("l1\nl2\nl3\nl4\nl5\n", "read workspace/five"))
	}
	for _, offset := range []string{`"3"`, `3.5`, `false`} {
		h.expect(memory.ToolRead, `{"path":"workspace/five","offset":`+offset+`,"limit":1}`, done("l1\n\n[Showing 1 of 5 lines. Continue with offset=2.]", "read workspace/five"))
	}
	h.expect(memory.ToolRead, `{"path":"workspace/five","offset":3e0,"limit":1}`, done("l3\n\n[Showing 1 of 3 lines. Continue with offset=4.]", "read workspace/five"))
	h.expect(memory.ToolRead, `{"path":"workspace/five","offset":1e300}`, done("", "read workspace/five"))
	h.expect(memory.ToolRead, `{"path":"workspace/five","offset":-1e300,"limit":1}`, done("l1\n\n[Showing 1 of 5 lines. Continue with offset=2.]", "read workspace/five"))
	h.write("workspace/hits", "hit\nhit\nhit\n")
	truncated := "workspace/hits:1: hit\n[Result limit reached. Narrow the pattern or raise limit=.]"
	all := "workspace/hits:1: hit\nworkspace/hits:2: hit\nworkspace/hits:3: hit"
	h.expect(memory.ToolGrep, `{"pattern":"hit","limit":1.0}`, done(truncated, "1 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"hit","limit":0}`, done(truncated, "1 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"hit","limit":"1"}`, done(all, "3 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"hit","limit":1.5}`, done(all, "3 matches"))
	h.expect(memory.ToolGrep, `{"pattern":"hit","limit":true}`, done(all, "3 matches"))
}
