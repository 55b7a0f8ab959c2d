package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/announce"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"a", "notes.md", "projects/alpha/todo list.md", "日本語", "...", ".hidden", "a..b", "a/.b/c",
		"skills", "skills/x", " ", "a b", "\u0080", "\u2028", "😀", strings.Repeat("x", MaxNameBytes),
		strings.Repeat("é", MaxNameBytes/2) + "x", "%_*?[]{}()|$^+", "a:b;c,d'e\"f",
	} {
		if err := ValidName(name); err != nil {
			t.Errorf("ValidName(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{
		"", "/", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "../a", "a/..", "a/./b", "a/../b",
		"a\x00", "a\x01", "a\t", "a\n", "a\r", "a\x1f", "a\x7f", `a\b`, `\`, "\xff", "a\xc3",
		strings.Repeat("x", MaxNameBytes+1), strings.Repeat("é", MaxNameBytes/2+1),
	} {
		if err := ValidName(name); !errors.Is(err, ErrNameInvalid) {
			t.Errorf("ValidName(%q) = %v, want ErrNameInvalid", name, err)
		}
	}
}

func TestIsReservedName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"skills": true, "skills/x": true, "skills/a/b": true, "skills/": true,
		"skillsx": false, "Skills/x": false, "a/skills/x": false, "skill": false, "": false,
	} {
		if got := IsReservedName(name); got != want {
			t.Errorf("IsReservedName(%q) = %v", name, got)
		}
	}
}

func TestValidScope(t *testing.T) {
	t.Parallel()
	good := Scope{Binding: "workspace", Kind: ScopeWorkspace, OwnerID: "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", Access: AccessReadWrite}
	if err := ValidScope(good); err != nil {
		t.Fatalf("ValidScope(good) = %v", err)
	}
	for _, ok := range []func(*Scope){
		func(s *Scope) { s.Binding = "a" },
		func(s *Scope) { s.Binding = "team_2-x" },
		func(s *Scope) { s.Binding = "a" + strings.Repeat("b", 31) },
		func(s *Scope) { s.Kind = ScopeConversation },
		func(s *Scope) { s.Kind = ScopeUser },
		func(s *Scope) { s.Access = AccessRead },
		func(s *Scope) { s.WorkspaceID = "00000000-0000-0000-0000-000000000000" },
	} {
		s := good
		ok(&s)
		if err := ValidScope(s); err != nil {
			t.Errorf("ValidScope(%+v) = %v", s, err)
		}
	}
	for _, bad := range []func(*Scope){
		func(s *Scope) { s.Binding = "" },
		func(s *Scope) { s.Binding = "1team" },
		func(s *Scope) { s.Binding = "Team" },
		func(s *Scope) { s.Binding = "a" + strings.Repeat("b", 32) },
		func(s *Scope) { s.Binding = "te am" },
		func(s *Scope) { s.Binding = "te/am" },
		func(s *Scope) { s.Kind = "team" },
		func(s *Scope) { s.Access = "" },
		func(s *Scope) { s.Access = "write" },
		func(s *Scope) { s.OwnerID = "" },
		func(s *Scope) { s.OwnerID = "0193C2D4-5E6F-7A8B-9C0D-1E2F3A4B5C6D" },
		func(s *Scope) { s.OwnerID = "0193c2d45e6f7a8b9c0d1e2f3a4b5c6d" },
		func(s *Scope) { s.OwnerID = "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6" },
		func(s *Scope) { s.OwnerID = "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6g" },
		func(s *Scope) { s.OwnerID = "0193c2d4_5e6f-7a8b-9c0d-1e2f3a4b5c6d" },
		func(s *Scope) { s.OwnerID = "../../../../etc/passwd/aaaaaaaaaaaaaa" },
		func(s *Scope) { s.WorkspaceID = "default" },
	} {
		s := good
		bad(&s)
		if err := ValidScope(s); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ValidScope(%+v) = %v, want ErrInvalidArgument", s, err)
		}
	}
}

func TestApplyEdit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		content, old, new, want string
		err                     error
	}{
		{"hello world", "world", "there", "hello there", nil},
		{"a.b*c", ".b*", "-", "a-c", nil},
		{"abc", "abc", "", "", nil},
		{"aaa", "aa", "x", "", ErrEditAmbiguous},
		{"abab", "ab", "x", "", ErrEditAmbiguous},
		{"aba", "a", "x", "", ErrEditAmbiguous},
		{"abc", "d", "x", "", ErrEditNotFound},
		{"", "a", "x", "", ErrEditNotFound},
		{"abc", "", "x", "", ErrInvalidArgument},
		{"日本語", "本", "🎉", "日🎉語", nil},
		{strings.Repeat("a", MaxDocumentBytes-1) + "b", "b", "cc", "", ErrTooLarge},
		{strings.Repeat("a", MaxDocumentBytes-1) + "b", "b", "c", strings.Repeat("a", MaxDocumentBytes-1) + "c", nil},
	} {
		got, err := ApplyEdit(c.content, c.old, c.new)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || got != c.want {
			t.Errorf("ApplyEdit(%.20q, %q, %q) = %.20q, %v; want %.20q, %v", c.content, c.old, c.new, got, err, c.want, c.err)
		}
	}
}

func TestCheckContent(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "text", "日本語\n", "\t\r\n\x7f"} {
		if err := CheckContent(ok); err != nil {
			t.Errorf("CheckContent(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"\x00", "a\x00b", "\xff", "a\xe6\x97"} {
		if err := CheckContent(bad); !errors.Is(err, ErrContentInvalid) {
			t.Errorf("CheckContent(%q) = %v", bad, err)
		}
	}
}

func TestGrepLines(t *testing.T) {
	t.Parallel()
	for content, want := range map[string][]string{
		"":             nil,
		"a":            {"a"},
		"a\n":          {"a"},
		"a\nb":         {"a", "b"},
		"\n":           {""},
		"\n\n":         {"", ""},
		"a\r\nb\r\n":   {"a", "b"},
		"a\r\r\n":      {"a\r"},
		"a\rb\n":       {"a\rb"},
		"\r":           {""},
		"x\n\ny\n\n":   {"x", "", "y", ""},
		"no newline\r": {"no newline"},
	} {
		if diff := cmp.Diff(want, GrepLines(content)); diff != "" {
			t.Errorf("GrepLines(%q) (-want +got):\n%s", content, diff)
		}
	}
}

func TestClampLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line, want string
		clamped    bool
	}{
		{"short", "short", false},
		{strings.Repeat("a", 500), strings.Repeat("a", 500), false},
		{strings.Repeat("a", 501), strings.Repeat("a", 500), true},
		{strings.Repeat("é", 500), strings.Repeat("é", 500), false},
		{strings.Repeat("é", 501), strings.Repeat("é", 500), true},
		{strings.Repeat("🎉", 300) + strings.Repeat("a", 300), strings.Repeat("🎉", 300) + strings.Repeat("a", 200), true},
	} {
		got, clamped := ClampLine(c.line)
		if got != c.want || clamped != c.clamped {
			t.Errorf("ClampLine(%d bytes) = %d bytes, %v; want %d bytes, %v", len(c.line), len(got), clamped, len(c.want), c.clamped)
		}
	}
}

func TestCompilePattern(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "(", "[a", `\1`, "a{2,1}", "(?<n>", "*"} {
		if _, err := CompilePattern(bad, false); !errors.Is(err, ErrPatternInvalid) {
			t.Errorf("CompilePattern(%q) = %v", bad, err)
		}
	}
	re, err := CompilePattern("retry|budget", true)
	if err != nil || !re.MatchString("BUDGET") || re.MatchString("other") {
		t.Errorf("ignore case applies to the whole alternation: %v", err)
	}
}

// naiveGrep is the definition a Matcher must agree with.
func naiveGrep(re *regexp.Regexp, docs []doc, limit int) GrepResponse {
	var out GrepResponse
	for _, d := range docs {
		for i, line := range GrepLines(d.content) {
			if !re.MatchString(line) {
				continue
			}
			if len(out.Matches) == limit {
				out.Truncated = true
				return out
			}
			text, clamped := ClampLine(line)
			out.Matches = append(out.Matches, Match{Name: d.name, LineNumber: i + 1, Text: text, Clamped: clamped})
		}
	}
	return out
}

type doc struct{ name, content string }

func runMatcher(t testing.TB, req *GrepRequest, docs []doc, asBytes bool) (*GrepResponse, error) {
	m, err := NewMatcher(req)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		scan := func() (bool, error) { return m.Scan(context.Background(), d.name, d.content) }
		if asBytes {
			scan = func() (bool, error) { return m.ScanBytes(context.Background(), d.name, []byte(d.content)) }
		}
		done, err := scan()
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return m.Response(), nil
}

func TestMatcher(t *testing.T) {
	t.Parallel()
	docs := []doc{
		{"a", "alpha\nbeta gamma\r\nalphabet\n\n"},
		{"b", "beta\nBETA\nx.y\nxzy\n"},
		{"c", strings.Repeat("é", 600) + " tail\n"},
		{"d", ""},
	}
	for _, pattern := range []string{"alpha", "beta", "x.y", `x\.y`, "^$", "^", "tail$", "a", "é", "gamma\r", "(?i)beta", "a\nb", "z+", "()"} {
		for _, ic := range []bool{false, true} {
			for _, limit := range []int{0, 1, 2, 3, 500} {
				for _, asBytes := range []bool{false, true} {
					req := &GrepRequest{Pattern: pattern, IgnoreCase: ic, Limit: limit}
					got, err := runMatcher(t, req, docs, asBytes)
					if err != nil {
						t.Fatalf("%q: %v", pattern, err)
					}
					re, _ := CompilePattern(pattern, ic)
					want := naiveGrep(re, docs, limit)
					if diff := cmp.Diff(&want, got, cmp.Comparer(func(a, b []Match) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })); diff != "" {
						t.Errorf("pattern %q ignore case %v limit %d bytes %v (-naive +matcher):\n%s", pattern, ic, limit, asBytes, diff)
					}
				}
			}
		}
	}
	for _, limit := range []int{-1, MaxGrepLimit + 1} {
		if _, err := NewMatcher(&GrepRequest{Pattern: "x", Limit: limit}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
}

func TestMatcherDeadline(t *testing.T) {
	t.Parallel()
	m, err := NewMatcher(&GrepRequest{Pattern: "x", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := m.Scan(expired, "doc", "x\n"); !errors.Is(err, ErrPatternTooCostly) {
		t.Errorf("expired deadline before a document: %v", err)
	}
	if _, err := m.ScanBytes(expired, "doc", []byte("x\n")); !errors.Is(err, ErrPatternTooCostly) {
		t.Errorf("expired deadline before a document, bytes: %v", err)
	}
	// The deadline is also checked inside a long document, every grepCheckEvery lines; the
	// pattern has no literal part, so the document is scanned line by line.
	m, err = NewMatcher(&GrepRequest{Pattern: "[xz]", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	deadlineCtx := &countingCtx{Context: ctx, after: 2, calls: &calls}
	if _, err := m.Scan(deadlineCtx, "doc", strings.Repeat("y\n", 10*grepCheckEvery)); !errors.Is(err, ErrPatternTooCostly) {
		t.Errorf("deadline passing inside a document: %v (checked %d times)", err, calls)
	}
	calls = 0
	if _, err := m.ScanBytes(deadlineCtx, "doc", []byte(strings.Repeat("y\n", 10*grepCheckEvery))); !errors.Is(err, ErrPatternTooCostly) {
		t.Errorf("deadline passing inside a document, bytes: %v (checked %d times)", err, calls)
	}
	cancel()
	canceled, stop := context.WithCancel(context.Background())
	stop()
	if _, err := m.Scan(canceled, "doc", "x"); !errors.Is(err, context.Canceled) || errors.Is(err, ErrPatternTooCostly) {
		t.Errorf("canceled context: %v", err)
	}
}

// countingCtx reports its deadline as passed from the after-th look on.
type countingCtx struct {
	context.Context
	after int
	calls *int
}

func (c *countingCtx) Err() error {
	*c.calls++
	if *c.calls > c.after {
		return context.DeadlineExceeded
	}
	return nil
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	want := map[ErrorKind]string{
		KindInvalidArgument: "invalid_argument", KindNameInvalid: "name_invalid", KindNotFound: "not_found",
		KindFull: "full", KindTooLarge: "too_large", KindContentInvalid: "content_invalid",
		KindEditNotFound: "edit_not_found", KindEditAmbiguous: "edit_ambiguous", KindPatternInvalid: "pattern_invalid",
		KindPatternTooCostly: "pattern_too_costly", KindReadOnly: "read_only", KindUnavailable: "unavailable",
	}
	numbers := map[ErrorKind]int32{
		KindInvalidArgument: 1, KindNameInvalid: 2, KindNotFound: 3, KindFull: 4, KindTooLarge: 5,
		KindContentInvalid: 6, KindEditNotFound: 7, KindEditAmbiguous: 8, KindPatternInvalid: 9,
		KindPatternTooCostly: 10, KindReadOnly: 11, KindUnavailable: 14, KindInternal: 15,
	}
	for k, n := range numbers {
		if int32(k) != n {
			t.Errorf("%s = %d, want the wire number %d", k, k, n)
		}
	}
	sentinels := []error{ErrInvalidArgument, ErrNameInvalid, ErrNotFound, ErrFull, ErrTooLarge, ErrContentInvalid,
		ErrEditNotFound, ErrEditAmbiguous, ErrPatternInvalid, ErrPatternTooCostly, ErrReadOnly, ErrUnavailable}
	for _, s := range sentinels {
		k := KindOf(fmt.Errorf("layer: %w", s))
		if want[k] == "" || k.String() != want[k] {
			t.Errorf("KindOf(%v) = %v", s, k)
		}
		back := ErrorFromKind(k, "detail for logs")
		if !errors.Is(back, s) || KindOf(back) != k || !strings.Contains(back.Error(), "detail for logs") {
			t.Errorf("round trip of %v: %v", s, back)
		}
		for _, other := range sentinels {
			if other != s && errors.Is(back, other) {
				t.Errorf("%v came back matching %v too", s, other)
			}
		}
	}
	if KindOf(nil) != KindUnspecified || KindOf(errors.New("x")) != KindInternal || KindInternal.String() != "internal" || ErrorKind(99).String() != "internal" {
		t.Error("kinds of nil, plain and unknown errors")
	}
	internal := ErrorFromKind(KindInternal, "boom")
	for _, s := range sentinels {
		if errors.Is(internal, s) {
			t.Errorf("an internal error matches %v", s)
		}
	}
	if KindOf(internal) != KindInternal || internal.Error() != "memory: internal error: boom" {
		t.Errorf("internal error: %v", internal)
	}
	if got := ErrorFromKind(KindNotFound, "").Error(); got != ErrNotFound.Error() {
		t.Errorf("kind without message: %q", got)
	}
}

func TestIntegerValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"5", 5, true}, {"-5", -5, true}, {"5.0", 5, true}, {"5.000", 5, true},
		{"5e0", 5, true}, {"5E+0", 5, true}, {"0.5e1", 5, true}, {"50e-1", 5, true}, {"1e3", 1000, true},
		{"0.0", 0, true}, {"0e99999999999", 0, true}, {"2000", 2000, true}, {"1.5e1", 15, true},
		{"9223372036854775807", math.MaxInt64, true}, {"9223372036854775808", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true}, {"-9223372036854775809", math.MinInt64, true},
		{"1e19", math.MaxInt64, true}, {"1e300", math.MaxInt64, true}, {"-1e300", math.MinInt64, true},
		{"1e99999999999999", math.MaxInt64, true}, {"123456789012345678901234567890", math.MaxInt64, true},
		{"5.5", 0, false}, {"0.5", 0, false}, {"5e-1", 0, false}, {"1e-99999999999", 0, false},
		{"5.0000000000000000001", 0, false}, {`"5"`, 0, false}, {"true", 0, false}, {"null", 0, false},
		{"", 0, false}, {"-", 0, false}, {"05", 0, false}, {"5.", 0, false}, {".5", 0, false}, {"5e", 0, false},
		{"5e+", 0, false}, {"+5", 0, false}, {"5 ", 0, false}, {"0x10", 0, false}, {"[5]", 0, false}, {"Infinity", 0, false},
	} {
		got, ok := integerValue(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("integerValue(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestToolNames: the Engine answers to exactly the six memory tools, in both spellings of the
// kernel name table, and to nothing else.
func TestToolNames(t *testing.T) {
	t.Parallel()
	wires := map[string]verb{ToolLs: verbLs, ToolRead: verbRead, ToolGrep: verbGrep, ToolWrite: verbWrite, ToolEdit: verbEdit, ToolDelete: verbDelete}
	found := 0
	for _, k := range announce.KernelNames() {
		if !strings.HasPrefix(k.Canonical, "nexus.memory.") {
			if _, ok := verbs[k.Wire]; ok {
				t.Errorf("%s is not a memory tool but the engine answers it", k.Wire)
			}
			continue
		}
		found++
		want, ok := wires[k.Wire]
		if !ok || verbs[k.Wire] != want || verbs[k.Canonical] != want {
			t.Errorf("%s / %s: engine verbs %v / %v", k.Canonical, k.Wire, verbs[k.Wire], verbs[k.Canonical])
		}
	}
	if found != 6 || len(verbs) != 12 {
		t.Errorf("%d memory rows in the name table, %d engine spellings; want 6 and 12", found, len(verbs))
	}
}
