package model

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzMockScript feeds arbitrary script text to the mock at an arbitrary round. It must never
// panic, must answer the same request the same way, and must answer a malformed script with the
// error text rather than an error value: the only error a script can cause is the *Error of its
// own error directive.
func FuzzMockScript(f *testing.F) {
	for _, s := range []string{
		"round 1\nsay Let me look.\ncall read_file {\"path\": \"notes.txt\"}\ncall grep#my-call-id {\"pattern\": \"TODO\"}\nround 2\nsay The file says: {{last_result}}\n!end",
		"round 1\nbigcall read_file 70000\nfinish length\nusage 1 2",
		"round 1:\nerror provider_overloaded Try later.\nround 2\nsleep 10\nsay {{round}} {{attachments}} {{attachment_count}}",
		"round 2\nround 1",
		"# comment\n\nround 1\nshout",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
	}
	if raw, err := os.ReadFile("testdata/pairing_law_example.txt"); err == nil {
		f.Add(string(raw), uint8(0))
	}
	f.Fuzz(func(t *testing.T, script string, round uint8) {
		entries := []Entry{
			system("sys"),
			{Role: RoleUser, Content: []Part{text("!mock\n" + script), attachment("a.png")}},
		}
		for i := 0; i < int(round%4); i++ {
			entries = append(entries, assistant("", ToolCall{ID: "c", Name: "t", Arguments: "{}"}), toolResult("c", "t", "result {{round}}"))
		}
		req := &Request{Entries: entries}
		first, err1 := instantMock(nil).Complete(context.Background(), req)
		again, err2 := instantMock(nil).Complete(context.Background(), req)
		if (err1 == nil) != (err2 == nil) || !cmp.Equal(first, again) {
			t.Fatalf("nondeterministic: %+v %v / %+v %v", first, err1, again, err2)
		}
		if err1 != nil {
			var me *Error
			if !errors.As(err1, &me) {
				t.Fatalf("error value %T %v; only the error directive may fail a call", err1, err1)
			}
			if !strings.Contains(script, "error") {
				t.Fatalf("*Error %v from a script without an error directive", me)
			}
			if err1.Error() != err2.Error() {
				t.Fatalf("errors differ: %v / %v", err1, err2)
			}
			return
		}
		if !first.Finish.Valid() {
			t.Fatalf("finish %q", first.Finish)
		}
		if rest, ok := strings.CutPrefix(first.Text, "mock script error: line "); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ':')])
			if err != nil || n < 1 || n > strings.Count(script, "\n")+1 {
				t.Fatalf("error line out of range: %q", first.Text)
			}
			if len(first.ToolCalls) != 0 || first.Finish != FinishStop {
				t.Fatalf("a script error answered calls or finish %q", first.Finish)
			}
		}
		if first.Usage.InputTokens < 0 || first.Usage.OutputTokens < 0 {
			t.Fatalf("usage %+v", first.Usage)
		}
		size := len(first.Text)
		for _, c := range first.ToolCalls {
			size += len(c.Name) + len(c.ID) + len(c.Arguments)
		}
		if size > MaxAnswerBytes {
			t.Fatalf("answer of %d bytes", size)
		}
	})
}
