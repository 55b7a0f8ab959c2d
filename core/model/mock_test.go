package model

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// answer is the part of a response the script decides; usage is tested on its own.
type answer struct {
	Text   string
	Calls  []ToolCall
	Finish Finish
}

func answerOf(r *Response) answer { return answer{r.Text, r.ToolCalls, r.Finish} }

var ignoreEmpty = cmpopts.EquateEmpty()

func TestMockDirectives(t *testing.T) {
	t.Parallel()
	big := func(n int) string { return `{"data":"` + strings.Repeat("x", n-11) + `"}` }
	cases := []struct {
		name   string
		script string
		round  int
		want   answer
	}{
		{"say", "!mock\nround 1\nsay Let me look.", 1, answer{Text: "Let me look.", Finish: FinishStop}},
		{"several says join with a line feed", "!mock\nround 1\nsay one\nsay two\nsay", 1,
			answer{Text: "one\ntwo\n", Finish: FinishStop}},
		{"backslash n stays literal", "!mock\nround 1\nsay a\\nb", 1, answer{Text: `a\nb`, Finish: FinishStop}},
		{"keyword separated by several spaces", "!mock\nround 1\nsay    spaced  out  ", 1,
			answer{Text: "spaced  out  ", Finish: FinishStop}},
		{"call", "!mock\nround 1\ncall read_file {\"path\": \"notes.txt\"}", 1,
			answer{Calls: []ToolCall{{ID: "mock_r1_0", Name: "read_file", Arguments: `{"path": "notes.txt"}`}}, Finish: FinishToolCalls}},
		{"call args are trimmed and sent verbatim", "!mock\nround 1\ncall f    [1,2]   ", 1,
			answer{Calls: []ToolCall{{ID: "mock_r1_0", Name: "f", Arguments: `[1,2]`}}, Finish: FinishToolCalls}},
		{"invalid JSON is not checked", "!mock\nround 1\ncall read_file {\"path\":", 1,
			answer{Calls: []ToolCall{{ID: "mock_r1_0", Name: "read_file", Arguments: `{"path":`}}, Finish: FinishToolCalls}},
		{"empty args send {}", "!mock\nround 1\ncall memory_ls", 1,
			answer{Calls: []ToolCall{{ID: "mock_r1_0", Name: "memory_ls", Arguments: `{}`}}, Finish: FinishToolCalls}},
		{"call with an id", "!mock\nround 1\ncall grep#my-call-id {\"pattern\": \"TODO\"}", 1,
			answer{Calls: []ToolCall{{ID: "my-call-id", Name: "grep", Arguments: `{"pattern": "TODO"}`}}, Finish: FinishToolCalls}},
		{"an empty id is sent empty", "!mock\nround 1\ncall grep# {}", 1,
			answer{Calls: []ToolCall{{ID: "", Name: "grep", Arguments: `{}`}}, Finish: FinishToolCalls}},
		{"parallel calls in line order, ids by index", "!mock\nround 1\nsay Two.\ncall a {}\ncall b#x {}\ncall c {}", 1,
			answer{Text: "Two.", Calls: []ToolCall{{ID: "mock_r1_0", Name: "a", Arguments: "{}"}, {ID: "x", Name: "b", Arguments: "{}"},
				{ID: "mock_r1_2", Name: "c", Arguments: "{}"}}, Finish: FinishToolCalls}},
		{"ids carry the round", "!mock\nround 1\ncall a {}\nround 3\ncall b {}\ncall b {}", 3,
			answer{Calls: []ToolCall{{ID: "mock_r3_0", Name: "b", Arguments: "{}"}, {ID: "mock_r3_1", Name: "b", Arguments: "{}"}}, Finish: FinishToolCalls}},
		{"bigcall", "!mock\nround 1\nbigcall read_file 70000", 1,
			answer{Calls: []ToolCall{{ID: "mock_r1_0", Name: "read_file", Arguments: big(70000)}}, Finish: FinishToolCalls}},
		{"smallest bigcall", "!mock\nround 1\nbigcall f#id 11", 1,
			answer{Calls: []ToolCall{{ID: "id", Name: "f", Arguments: `{"data":""}`}}, Finish: FinishToolCalls}},
		{"finish replaces the default", "!mock\nround 1\ncall a {}\nfinish length", 1,
			answer{Calls: []ToolCall{{ID: "mock_r1_0", Name: "a", Arguments: "{}"}}, Finish: FinishLength}},
		{"finish refused without calls", "!mock\nround 1\nsay no\nfinish refused", 1, answer{Text: "no", Finish: FinishRefused}},
		{"finish tool_calls without calls", "!mock\nround 1\nfinish tool_calls", 1, answer{Finish: FinishToolCalls}},
		{"the last finish wins", "!mock\nround 1\nfinish length\nfinish stop", 1, answer{Finish: FinishStop}},
		{"round with a colon", "!mock\nround 1:\nsay colon", 1, answer{Text: "colon", Finish: FinishStop}},
		{"comments, blank lines and indentation", "!mock\n# a comment\n\n   \nround 1\n  # indented comment\n\tsay indented", 1,
			answer{Text: "indented", Finish: FinishStop}},
		{"crlf line ends", "!mock\r\nround 1\r\nsay crlf\r\ncall a {}\r\n", 1,
			answer{Text: "crlf", Calls: []ToolCall{{ID: "mock_r1_0", Name: "a", Arguments: "{}"}}, Finish: FinishToolCalls}},
		{"round two", "!mock\nround 1\nsay first\nround 2\nsay second", 2, answer{Text: "second", Finish: FinishStop}},
		{"gaps in round numbers", "!mock\nround 2\nsay two\nround 5\nsay five", 5, answer{Text: "five", Finish: FinishStop}},
		{"a missing round", "!mock\nround 1\nsay one\nround 3\nsay three", 2, answer{Text: "mock script has no round 2", Finish: FinishStop}},
		{"past the last round", "!mock\nround 1\nsay one", 4, answer{Text: "mock script has no round 4", Finish: FinishStop}},
		{"an empty round", "!mock\nround 1\n# nothing\nround 2\nsay two", 1, answer{Text: "mock script has no round 1", Finish: FinishStop}},
		{"an empty script", "!mock", 1, answer{Text: "mock script has no round 1", Finish: FinishStop}},
		{"!end stops the script", "!mock\nround 1\nsay kept\n  !end  \nsay dropped\nbogus line", 1, answer{Text: "kept", Finish: FinishStop}},
		{"text before !mock is not script", "Please do this.\nround 1\n!mock\nround 1\nsay script", 1, answer{Text: "script", Finish: FinishStop}},
		{"!mock with surrounding spaces", "  !mock \t\nround 1\nsay ok", 1, answer{Text: "ok", Finish: FinishStop}},
		{"sleep adds nothing to the answer", "!mock\nround 1\nsleep 5\nsay woke", 1, answer{Text: "woke", Finish: FinishStop}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := answerOf(complete(t, atRound(c.script, c.round)...))
			if diff := cmp.Diff(c.want, got, ignoreEmpty); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestMockMalformedScripts(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, script, want string }{
		{"unknown directive", "!mock\nround 1\nshout hi", `line 2: unknown directive "shout"`},
		{"directive keywords are case-sensitive", "!mock\nround 1\nSay hi", `line 2: unknown directive "Say"`},
		{"non-increasing round", "!mock\nround 2\nsay a\nround 2\nsay b", `line 3: round 2 does not follow round 2: round numbers must increase`},
		{"decreasing round", "!mock\nround 3\nround 1", `line 2: round 1 does not follow round 3: round numbers must increase`},
		{"round zero", "!mock\nround 0", `line 1: round numbers start at 1`},
		{"round without number", "!mock\n\nround", `line 2: round needs a number`},
		{"bad round number", "!mock\nround one", `line 1: bad number "one"`},
		{"negative round number", "!mock\nround -1", `line 1: bad number "-1"`},
		{"directive before any round", "!mock\n# c\nsay hi", `line 2: say before any round`},
		{"call without a name", "!mock\nround 1\ncall", `line 2: call needs a tool name`},
		{"call with only an id", "!mock\nround 1\ncall #id {}", `line 2: call needs a tool name`},
		{"bigcall without size", "!mock\nround 1\nbigcall f", `line 2: bigcall needs a tool name and a size in bytes`},
		{"bigcall bad size", "!mock\nround 1\nbigcall f 1k", `line 2: bad number "1k"`},
		{"bigcall too small", "!mock\nround 1\nbigcall f 10", `line 2: bigcall size must be at least 11 bytes`},
		{"bigcall too large", "!mock\nround 1\nbigcall f 8388609", `line 2: bigcall size must be at most 8388608 bytes`},
		{"bigcalls over the answer bound", "!mock\nround 1\nbigcall f 8000000\nbigcall f 8000000", `line 3: the round's bigcalls exceed 8388608 bytes`},
		{"unknown finish", "!mock\nround 1\nfinish done", `line 2: finish "done" is not stop, tool_calls, length or refused`},
		{"error without key", "!mock\nround 1\nerror", `line 2: error needs a key`},
		{"sleep bad number", "!mock\nround 1\nsleep 1.5", `line 2: bad number "1.5"`},
		{"sleep too long", "!mock\nround 1\nsleep 60001", `line 2: sleep must be at most 60000 milliseconds`},
		{"usage one number", "!mock\nround 1\nusage 5", `line 2: usage needs two token counts`},
		{"usage bad input", "!mock\nround 1\nusage x 5", `line 2: bad number "x"`},
		{"usage bad output", "!mock\nround 1\nusage 5 -5", `line 2: bad number "-5"`},
		{"an error in a later round still counts", "!mock\nround 1\nsay fine\nround 2\nbogus", `line 4: unknown directive "bogus"`},
		{"lines count from !mock, not the message", "Intro line.\nSecond line.\n!mock\nround 1\n\n\nnope", `line 4: unknown directive "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := answerOf(complete(t, user(c.script)))
			want := answer{Text: "mock script error: " + c.want, Finish: FinishStop}
			if diff := cmp.Diff(want, got, ignoreEmpty); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestMockSubstitutions(t *testing.T) {
	t.Parallel()
	script := "!mock\nround 1\ncall a {}\nround 2\nsay round {{round}} read [{{last_result}}] with {{attachment_count}}: {{attachments}}\n" +
		"call f {\"r\": {{round}}, \"n\": {{attachment_count}}, \"last\": \"{{last_result}}\"}\ncall g#{{round}} {}"
	opening := Entry{Role: RoleUser, Content: []Part{text(script), attachment("page.png"), attachment("two words.pdf")}}
	entries := []Entry{opening, assistant("", ToolCall{ID: "mock_r1_0", Name: "a", Arguments: "{}"}), toolResult("mock_r1_0", "a", "A {{round}} result")}
	got := answerOf(complete(t, entries...))
	want := answer{
		Text: "round 2 read [A {{round}} result] with 2: page.png,two words.pdf",
		Calls: []ToolCall{
			{ID: "mock_r2_0", Name: "f", Arguments: `{"r": 2, "n": 2, "last": "A {{round}} result"}`},
			// Substitutions apply to say text and call arguments only, never to a name or id.
			{ID: "{{round}}", Name: "g", Arguments: "{}"},
		},
		Finish: FinishToolCalls,
	}
	if diff := cmp.Diff(want, got, ignoreEmpty); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestMockLastResult(t *testing.T) {
	t.Parallel()
	script := user("!mock\nround 1\nsay [{{last_result}}]\nround 2\nsay [{{last_result}}]\nround 3\nsay [{{last_result}}]")
	cases := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"none", []Entry{script}, "[]"},
		{"the last tool entry", []Entry{script, assistant("", ToolCall{"1", "a", "{}"}, ToolCall{"2", "b", "{}"}),
			toolResult("1", "a", "first"), toolResult("2", "b", "second")}, "[second]"},
		{"a blank tool result is empty", []Entry{script, assistant("", ToolCall{"1", "a", "{}"}, ToolCall{"2", "b", "{}"}),
			toolResult("1", "a", "first"), toolResult("2", "b", "")}, "[]"},
		{"a later delivery wins over a tool entry", []Entry{script, assistant("", ToolCall{"1", "a", "{}"}),
			toolResult("1", "a", "tool text"), delivery("r2t9", "late")},
			"[<task_result task=\"r2t9\" status=\"completed\">\n<prompt></prompt>\nlate\n</task_result>]"},
		{"a later tool entry wins over a delivery", []Entry{delivery("s1-model-1", "early"), script,
			assistant("", ToolCall{"1", "a", "{}"}), toolResult("1", "a", "tool text")}, "[tool text]"},
		{"a multi-part tool entry joins its text", []Entry{script, assistant("", ToolCall{"1", "a", "{}"}),
			{Role: RoleTool, ToolCallID: "1", Name: "a", Content: []Part{text("one"), text("two")}}}, "[one\ntwo]"},
		{"an ordinary user message is not a result", []Entry{script, assistant("", ToolCall{"1", "a", "{}"}),
			toolResult("1", "a", "tool"), assistant("done"), user("a steer")}, "[tool]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := complete(t, c.entries...).Text; got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestMockRoundCounting(t *testing.T) {
	t.Parallel()
	script := func(tag string) string {
		return "!mock\nround 1\nsay " + tag + " one\nround 2\nsay " + tag + " two\nround 3\nsay " + tag + " three"
	}
	call := ToolCall{ID: "c", Name: "t", Arguments: "{}"}
	cases := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"first round", []Entry{system("sys"), user(script("A"))}, "A one"},
		{"one assistant after the script", []Entry{system("sys"), user(script("A")), assistant("", call), toolResult("c", "t", "r")}, "A two"},
		{"assistants before the script do not count", []Entry{
			user(script("A")), assistant("", call), toolResult("c", "t", "r"), assistant("A done"),
			user(script("B")),
		}, "B one"},
		{"a later turn's script restarts the count", []Entry{
			user(script("A")), assistant("", call), toolResult("c", "t", "r"), assistant("A done"),
			user(script("B")), assistant("", call), toolResult("c", "t", "r"),
		}, "B two"},
		{"a kernel delivery is never scanned", []Entry{
			user(script("A")), assistant("", call), toolResult("c", "t", "r"),
			delivery("r2t0", script("D")),
		}, "A two"},
		{"a message without a script keeps the last script counting", []Entry{
			user(script("A")), assistant("", call), toolResult("c", "t", "r"), assistant("A done"),
			user("a plain follow-up"),
		}, "A three"},
		{"tool entries are never scanned", []Entry{
			user(script("A")), assistant("", call), toolResult("c", "t", script("T")),
		}, "A two"},
		{"assistant entries are never scanned", []Entry{
			user(script("A")), assistant(script("X"), call), toolResult("c", "t", "r"),
		}, "A two"},
		{"the system entry when no user entry has a script", []Entry{
			system(script("S")), user("hello"), assistant("", call), toolResult("c", "t", "r"), assistant("x"), user("again"),
		}, "S three"},
		{"a user script wins over the system one", []Entry{system(script("S")), user("hello"), assistant("hi"), user(script("U"))}, "U one"},
		{"the first part holding a script wins within an entry", []Entry{
			{Role: RoleUser, Content: []Part{text("no script"), text(script("P1")), text(script("P2"))}},
		}, "P1 one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := complete(t, c.entries...).Text; got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestMockEcho(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"the last user entry", []Entry{system("be brief"), user("first"), assistant("ok"), user("second")}, "echo: second"},
		{"text parts joined", []Entry{{Role: RoleUser, Content: []Part{text("a"), attachment("x.png"), text("b")}}}, "echo: a\nb"},
		{"only an attachment", []Entry{{Role: RoleUser, Content: []Part{attachment("x.png")}}}, "echo: (no text)"},
		{"no user entry", []Entry{system("sys")}, "echo: (no text)"},
		{"no entries", nil, "echo: (no text)"},
		{"a script-less delivery is echoed as the last user entry", []Entry{user("go"), delivery("r2t0", "body")},
			"echo: <task_result task=\"r2t0\" status=\"completed\">\n<prompt></prompt>\nbody\n</task_result>"},
		{"a mock line that is not exact", []Entry{user("!mock please\nround 1\nsay x")}, "echo: !mock please\nround 1\nsay x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := answerOf(complete(t, c.entries...))
			if diff := cmp.Diff(answer{Text: c.want, Finish: FinishStop}, got, ignoreEmpty); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestMockErrorDirective(t *testing.T) {
	t.Parallel()
	var slept time.Duration
	cases := []struct {
		script string
		want   *Error
	}{
		{"!mock\nround 1\nsay ignored\ncall a {}\nerror provider_overloaded Try again later.\nsleep 100",
			&Error{Key: "provider_overloaded", Detail: "Try again later."}},
		{"!mock\nround 1\nerror context_overflow", &Error{Key: "context_overflow"}},
		{"!mock\nround 1\nerror model_refused first\nerror provider_error second", &Error{Key: "model_refused", Detail: "first"}},
	}
	for _, c := range cases {
		_, err := instantMock(&slept).Complete(context.Background(), &Request{Entries: []Entry{user(c.script)}})
		var me *Error
		if !errors.As(err, &me) {
			t.Fatalf("%q: got %v, want a *model.Error", c.script, err)
		}
		if diff := cmp.Diff(c.want, me); diff != "" {
			t.Errorf("%q: (-want +got)\n%s", c.script, diff)
		}
	}
	if slept != 0 {
		t.Errorf("an error round slept %v; its other directives are ignored", slept)
	}
	// Another round of the same script answers normally.
	if got := complete(t, atRound("!mock\nround 1\nerror provider_error\nround 2\nsay fine", 2)...).Text; got != "fine" {
		t.Errorf("round 2 = %q", got)
	}
}

func TestMockSleep(t *testing.T) {
	t.Parallel()
	var slept time.Duration
	resp, err := instantMock(&slept).Complete(context.Background(), &Request{Entries: []Entry{user("!mock\nround 1\nsleep 250\nsay a\nsleep 50")}})
	if err != nil || resp.Text != "a" {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if slept != 300*time.Millisecond {
		t.Errorf("slept %v, want the sum of the round's sleeps, 300ms", slept)
	}

	// The real sleep honours cancellation and answers ctx.Err().
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := NewMock("mock").Complete(ctx, &Request{Entries: []Entry{user("!mock\nround 1\nsleep 60000\nsay late")}})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if time.Since(start) > 10*time.Second {
			t.Error("cancellation did not cut the sleep short")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a canceled sleep did not return")
	}

	// A real, short sleep waits and answers.
	start = time.Now()
	resp, err = NewMock("mock").Complete(context.Background(), &Request{Entries: []Entry{user("!mock\nround 1\nsleep 30\nsay awake")}})
	if err != nil || resp.Text != "awake" {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Error("sleep 30 returned early")
	}

	// A context canceled before the call is honoured at once.
	_, err = NewMock("mock").Complete(ctx, &Request{Entries: []Entry{user("hello")}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: got %v", err)
	}
}

func TestMockUsage(t *testing.T) {
	t.Parallel()
	scripted := "!mock\nround 1\nsay Hi.\ncall read_file {\"path\":\"a\"}\nround 2\nusage 12 34\nsay counted"
	entries := []Entry{system("sys"), user(scripted)}
	tools := []ToolSchema{{Name: "read_file", Description: "Read a file.", Parameters: []byte(`{"type":"object"}`)}}
	resp, err := instantMock(nil).Complete(context.Background(), &Request{Entries: entries, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	in, err := EstimateTokens(entries, tools)
	if err != nil {
		t.Fatal(err)
	}
	// output: "Hi." (3) + "read_file" (9) + `{"path":"a"}` (12) = 24 bytes, 6 tokens.
	if want := (Usage{InputTokens: in, OutputTokens: 6}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	if in == 0 {
		t.Error("the estimate of a non-empty request is 0")
	}
	// An odd size rounds up: "Hi!!!" is 5 bytes, 2 tokens.
	resp = complete(t, user("!mock\nround 1\nsay Hi!!!"))
	if resp.Usage.OutputTokens != 2 {
		t.Errorf("5 bytes gave %d output tokens, want 2", resp.Usage.OutputTokens)
	}
	// The usage directive replaces both counts.
	resp, err = instantMock(nil).Complete(context.Background(), &Request{Entries: append(entries,
		assistant("Hi.", ToolCall{"mock_r1_0", "read_file", `{"path":"a"}`}), toolResult("mock_r1_0", "read_file", "x")), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "counted" || resp.Usage != (Usage{InputTokens: 12, OutputTokens: 34}) {
		t.Errorf("usage directive: %+v", resp)
	}
	// Echoes and script errors report the estimate too.
	for _, e := range [][]Entry{{user("plain")}, {user("!mock\nbogus")}, {user("!mock\nround 2\nsay x")}} {
		r := complete(t, e...)
		est, _ := EstimateTokens(e, nil)
		if r.Usage != (Usage{InputTokens: est, OutputTokens: ceilDiv(int64(len(r.Text)), 4)}) {
			t.Errorf("%q: usage %+v", r.Text, r.Usage)
		}
	}
}

func TestMockIsDeterministic(t *testing.T) {
	t.Parallel()
	req := &Request{Entries: []Entry{
		system("sys"),
		{Role: RoleUser, Content: []Part{text("!mock\nround 1\ncall a {}\ncall b#id {\"x\":1}\nround 2\nsay {{last_result}} {{attachments}} {{round}}\nbigcall c 100"), attachment("p.png")}},
		assistant("", ToolCall{"mock_r1_0", "a", "{}"}, ToolCall{"id", "b", `{"x":1}`}),
		toolResult("mock_r1_0", "a", "A"), toolResult("id", "b", "B"),
	}, Tools: []ToolSchema{{Name: "a"}, {Name: "b"}}}
	first, err := NewMock("mock").Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := NewMock("mock").Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("the same request answered differently:\n%s", diff)
		}
	}
	if first.Text != "B p.png 2" {
		t.Errorf("text %q", first.Text)
	}
}

func TestMockName(t *testing.T) {
	t.Parallel()
	if got := NewMock("lab").Name(); got != "lab" {
		t.Errorf("Name() = %q", got)
	}
	if _, err := NewMock("mock").Complete(context.Background(), nil); err == nil {
		t.Error("a nil request was answered")
	}
	// A request the estimate cannot encode is a plain error (the kernel's provider_error).
	_, err := NewMock("mock").Complete(context.Background(), &Request{Entries: []Entry{{Role: "robot"}}})
	var me *Error
	if err == nil || errors.As(err, &me) {
		t.Errorf("bad entry: got %v, want a plain error", err)
	}
}

func TestMockIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	m := MustBuiltin()
	p, _ := m.Provider("mock")
	req := &Request{Entries: atRound("!mock\nround 1\ncall a {}\nround 2\nsay {{last_result}}", 2)}
	want, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 50 {
				got, err := p.Complete(context.Background(), req)
				if err != nil || !cmp.Equal(want, got) {
					errs <- errors.New("a concurrent call answered differently")
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestMockAnswerBound(t *testing.T) {
	t.Parallel()
	// Copies of a 1 MiB result joined by line feeds pass the 8 MiB answer bound with the eighth
	// say, on line 11.
	script := "!mock\nround 1\ncall a {}\nround 2\n" + strings.Repeat("say {{last_result}}\n", 9)
	entries := []Entry{user(script), assistant("", ToolCall{"mock_r1_0", "a", "{}"}), toolResult("mock_r1_0", "a", strings.Repeat("r", 1<<20))}
	got := answerOf(complete(t, entries...))
	want := answer{Text: "mock script error: line 11: the answer exceeds 8388608 bytes", Finish: FinishStop}
	if diff := cmp.Diff(want, got, ignoreEmpty); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// Seven copies fit.
	script = "!mock\nround 1\ncall a {}\nround 2\n" + strings.Repeat("say {{last_result}}\n", 7)
	entries[0] = user(script)
	if got := complete(t, entries...); len(got.Text) != 7<<20+6 {
		t.Errorf("seven copies: %d bytes", len(got.Text))
	}
}

// TestMockStreams: with a delta listener, the mock hands on its text in pieces of at most
// MockPiece bytes (more only to finish a character), which join to the answer's text, then each
// call's name, all under attempt 1; without one it streams nothing.
func TestMockStreams(t *testing.T) {
	t.Parallel()
	text := "Déjà vu: the plan ships on Friday, after the review."
	var pieces []string
	var calls []string
	req := &Request{Ref: "mock/scripted", Model: "scripted", Entries: atRound("!mock\nround 1\nsay "+text+"\ncall a {}\ncall b {}", 1),
		OnDelta: func(d Delta) {
			if d.Attempt != 1 {
				t.Errorf("attempt %d", d.Attempt)
			}
			if d.ToolCall != "" {
				calls = append(calls, d.ToolCall)
				return
			}
			pieces = append(pieces, d.Text)
		}}
	resp, err := instantMock(nil).Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pieces, "") != resp.Text || resp.Text != text || len(pieces) < 3 {
		t.Fatalf("pieces %q for %q", pieces, resp.Text)
	}
	for _, p := range pieces {
		if len(p) > MockPiece+utf8.UTFMax-1 || !utf8.ValidString(p) {
			t.Fatalf("piece %q: %d bytes or cut inside a character", p, len(p))
		}
	}
	if !slices.Equal(calls, []string{"a", "b"}) {
		t.Fatalf("call names %q", calls)
	}
}
