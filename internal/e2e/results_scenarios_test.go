package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// oneCall is a script whose round 1 calls screenshot once and whose round 2 repeats the result.
const oneCall = "!mock\nround 1\ncall screenshot {\"url\":\"https://example.test\"}\nround 2\nsay {{last_result}}"

// routedRun starts a standalone run of one model step that declares screenshot on r.
func (p *plane) routedRun(r *executor, script string) string {
	p.t.Helper()
	return p.modelRun("mock/scripted", script, []any{routed("screenshot", r.id)}, nil, "bypass", nil)
}

// claimed waits for the row in r's inbox and claims it.
func (p *plane) claimed(r *executor, run, key string) string {
	p.t.Helper()
	p.inboxRow(r, run, key)
	return p.claim(r, run, key).Claim.ClaimToken
}

// TestStructuredOnlyAndBlankResults is scenario 6: structure without text gives the model
// nothing, null and false are kept, whitespace writes no body.
func TestStructuredOnlyAndBlankResults(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0))
			cases := []struct {
				name   string
				result *client.Result
				sc     string // "" when absent
			}{
				{"false", &client.Result{StructuredContent: json.RawMessage(`false`)}, "false"},
				{"null", &client.Result{StructuredContent: json.RawMessage(`null`)}, "null"},
				{"blank", &client.Result{Content: "   "}, ""},
			}
			for _, c := range cases {
				run := p.routedRun(r, oneCall)
				tok := p.claimed(r, run, "r2t0")
				p.commit(r, run, "r2t0", tok, c.result)
				p.waitRunStatus(run, "completed")
				tk := p.task(run, "r2t0")
				var keys struct {
					Task map[string]json.RawMessage `json:"task"`
				}
				_ = json.Unmarshal(tk.Raw, &keys)
				if _, has := keys.Task["content"]; has || deref(tk.Task.Output) != "" || tk.Task.Content != nil {
					t.Fatalf("%s: %s", c.name, tk.Raw)
				}
				switch {
				case c.sc == "" && tk.Task.StructuredContent != nil:
					t.Fatalf("%s: structured_content %s", c.name, *tk.Task.StructuredContent)
				case c.sc != "" && (tk.Task.StructuredContent == nil || string(*tk.Task.StructuredContent) != c.sc):
					t.Fatalf("%s: %s", c.name, tk.Raw)
				}
				entries := p.sealedEntries(run, "r2")
				if last := string(entries[len(entries)-1]); last != `{"role":"tool","tool_call_id":"mock_r1_0","name":"screenshot","is_error":false,"content":[]}` {
					t.Fatalf("%s: tool entry %s", c.name, last)
				}
			}
		})
	}
}

// TestIdentityCase is scenario 7: a bare string and one text block store, project and seal the
// same bytes.
func TestIdentityCase(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0))
			var contents, outputs, entries []string
			for _, content := range []any{"ok", []client.ContentBlock{client.TextBlock("ok")}} {
				run := p.routedRun(r, oneCall)
				tok := p.claimed(r, run, "r2t0")
				p.commit(r, run, "r2t0", tok, &client.Result{Content: content})
				p.waitRunStatus(run, "completed")
				tk := p.task(run, "r2t0")
				contents = append(contents, string(tk.Task.Content))
				outputs = append(outputs, deref(tk.Task.Output))
				es := p.sealedEntries(run, "r2")
				entries = append(entries, string(es[len(es)-1]))
			}
			if contents[0] != contents[1] || contents[0] != `[{"type":"text","text":"ok"}]` || outputs[0] != outputs[1] || outputs[0] != "ok" || entries[0] != entries[1] {
				t.Fatalf("content %q, output %q, entries %q", contents, outputs, entries)
			}
		})
	}
}

// TestWriteOnce is scenario 14: the first applied commit wins; a repeat is idle.
func TestWriteOnce(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0))
			run := p.routedRun(r, oneCall)
			tok := p.claimed(r, run, "r2t0")
			if first := p.commit(r, run, "r2t0", tok, &client.Result{Content: "first"}); !first.Applied {
				t.Fatalf("first %s", first.Raw)
			}
			second := p.commit(r, run, "r2t0", tok, &client.Result{Content: "second", IsError: true})
			if second.Applied || second.Task.Status != "completed" {
				t.Fatalf("second %s", second.Raw)
			}
			if tk := p.task(run, "r2t0"); deref(tk.Task.Output) != "first" || deref(tk.Task.IsError) {
				t.Fatalf("stored %s", tk.Raw)
			}
		})
	}
}

// TestGrammarRefusalsLeaveTheParkStanding is scenario 15: every envelope refusal answers its
// word and changes nothing; a corrected commit then settles the row.
func TestGrammarRefusalsLeaveTheParkStanding(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			q := p.executor("tool_provider", "q")
			p.announce(r, tool("screenshot", 0))
			run := p.routedRun(r, oneCall)
			tok := p.claimed(r, run, "r2t0")
			before := p.task(run, "r2t0")
			own := p.capture(r, "own.png", pngBytes)
			foreign := p.capture(q, "foreign.png", pngBytes)
			blocks := make([]string, 257)
			for i := range blocks {
				blocks[i] = `{"type":"text","text":"x"}`
			}
			big := `{"k":"` + strings.Repeat("m", 70*1024) + `"}`
			cases := []struct{ name, fields, code, path string }{
				{"image block", `"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]`, "unsupported_content_kind", "content[0].type"},
				{"https link", `"content":[{"type":"resource_link","uri":"https://example.test/a.png","name":"a.png"}]`, "invalid_content", "content[0].uri"},
				{"nameless link", `"content":[{"type":"resource_link","uri":"` + own.URI() + `"}]`, "invalid_content", "content[0].name"},
				{"257 blocks", `"content":[` + strings.Join(blocks, ",") + `]`, "too_many_content_blocks", "content"},
				{"result_type", `"result_type":"input_required"`, "invalid_result_type", "result_type"},
				{"metadata", `"metadata":` + big, "metadata_too_large", "metadata"},
				{"title", `"title":"two\nlines"`, "invalid_title", "title"},
				{"foreign capture", `"content":[{"type":"resource_link","uri":"` + own.URI() + `","name":"own.png"},{"type":"resource_link","uri":"` + foreign.URI() + `","name":"q.png"}]`, "unknown_result_upload", "content[1].uri"},
				{"outcome", `"outcome":"maybe"`, "invalid_outcome", "outcome"},
				{"is_error", `"is_error":"yes"`, "invalid_content", "is_error"},
				{"metadata type", `"metadata":[1]`, "invalid_metadata", "metadata"},
				{"result bound", `"content":"` + strings.Repeat("r", 1<<20) + `"`, "result_too_large", ""},
			}
			for _, c := range cases {
				body := `{"claim_token":"` + tok + `",` + c.fields + `}`
				_, err := r.c.CommitRaw(p.ctx, run, "r2t0", json.RawMessage(body))
				ce := wantCode(t, err, 422, c.code)
				if path := string(ce.Extra["path"]); c.path != "" && path != `"`+c.path+`"` || c.path == "" && path != "" {
					t.Fatalf("%s: path %s", c.name, path)
				}
				after := p.task(run, "r2t0")
				if after.Task.Status != "dispatched" || deref(after.Task.DeadlineAt) != deref(before.Task.DeadlineAt) || !strings.Contains(string(after.Raw), `"generation":1`) {
					t.Fatalf("%s moved the park: %s", c.name, after.Raw)
				}
			}
			if cap, err := r.c.Capture(p.ctx, own.Upload.PublicID); err != nil || cap.Upload.Bound {
				t.Fatalf("own capture after whole-or-nothing: %s %v", cap.Raw, err)
			}
			res := p.commit(r, run, "r2t0", tok, &client.Result{Content: []client.ContentBlock{client.TextBlock("fine"), client.LinkBlock(&own.Upload, "own.png")}})
			if !res.Applied {
				t.Fatalf("final commit %s", res.Raw)
			}
			if cap, err := r.c.Capture(p.ctx, own.Upload.PublicID); err != nil || !cap.Upload.Bound {
				t.Fatalf("own capture after the commit: %v", err)
			}
		})
	}
}

// TestResultUnstorableClosesThePark is scenario 16: bytes the store cannot keep refuse 422 and
// settle the row failed at once, so the next round runs and reads the failure. Its second half,
// the same text at an ask's resolution door, is TestResultUnstorableAtTheAskDoor.
func TestResultUnstorableClosesThePark(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0))
			run := p.routedRun(r, oneCall)
			tok := p.claimed(r, run, "r2t0")
			_, err := r.c.CommitRaw(p.ctx, run, "r2t0", json.RawMessage(`{"claim_token":"`+tok+`","content":"nul \u0000 here"}`))
			ce := wantCode(t, err, 422, "result_unstorable")
			var task struct {
				Status string `json:"status"`
				Error  struct {
					Key    string `json:"key"`
					Detail string `json:"detail"`
				} `json:"error"`
			}
			if json.Unmarshal(ce.Extra["task"], &task) != nil || task.Status != "failed" || task.Error.Key != "result_unstorable" {
				t.Fatalf("refusal task %s", ce.Extra["task"])
			}
			tk := p.task(run, "r2t0")
			if tk.Task.Status != "failed" || tk.Task.Error == nil || tk.Task.Error.Key != "result_unstorable" || !strings.HasPrefix(tk.Task.Error.Detail, "unsupported_text:") {
				t.Fatalf("task %s", tk.Raw)
			}
			final := p.waitRunStatus(run, "completed")
			if !strings.HasPrefix(deref(final.Answer), "<tool_use_error>") {
				t.Fatalf("answer %q", deref(final.Answer))
			}
			again := p.commit(r, run, "r2t0", tok, &client.Result{Content: "fine now"})
			if again.Applied || again.Task.Status != "failed" {
				t.Fatalf("repeat %s", again.Raw)
			}
		})
	}
}
