package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

const screenshotScript = "Look at the page.\n!mock\nround 1\ncall screenshot {\"url\":\"https://example.test\"}\nround 2\nsay {{attachments}}"

// conversationWithRunner creates agent A whose profile declares screenshot routed to R, a
// conversation A answers, and returns it.
func (p *plane) conversationWithRunner(r *executor) string {
	p.t.Helper()
	agent, err := p.admin.CreateAgent(p.ctx, "default", &client.CreateAgentRequest{Handle: "a", DisplayName: "A"})
	if err != nil {
		p.t.Fatal(err)
	}
	decl, _ := json.Marshal([]any{routed("screenshot", r.id), routed("fetch_log", r.id)})
	mode := "bypass"
	if _, err := p.srv.ClientWith(agent.Token).PutProfileConfiguration(p.ctx, &client.ProfileConfigurationRequest{
		Configuration: client.ProfileConfiguration{ToolDefinitions: decl, ApprovalMode: &mode}}); err != nil {
		p.t.Fatal(err)
	}
	conv, err := p.admin.CreateConversation(p.ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID})
	if err != nil {
		p.t.Fatal(err)
	}
	return conv.Conversation.PublicID
}

// TestGoldenPathWithImage is a capture's golden path (docs/api.md#the-executor-plane) twice: with
// mock/scripted, and with mock/text-only, where unreadable media becomes an index line. A Runner is
// pushed work_available, reads its inbox, claims, stages a PNG capture and commits a text block, a
// link to the capture, structured content, a title and a checkpoint; the member reads everything
// back, the next request carries the image as an attachment part after the tool entry (or an index
// line), and the member downloads the bytes.
func TestGoldenPathWithImage(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		for _, model := range []string{"mock/scripted", "mock/text-only"} {
			t.Run(string(d)+"/"+model, func(t *testing.T) {
				t.Parallel()
				p := newPlane(t, d)
				r := p.executor("runner", "laptop")
				p.announce(r, tool("screenshot", 120000), tool("fetch_log", 0))
				conv := p.conversationWithRunner(r)
				ev := p.events(r)
				msg, err := p.admin.PostMessage(p.ctx, "default", conv, map[string]any{"text": screenshotScript, "model": model}, "")
				if err != nil {
					t.Fatal(err)
				}
				run := msg.Run.PublicID
				got := ev.next(t)
				if got.Type != "work_available" || got.TaskKey != "r2t0" || got.RunPublicID != run || got.ToolName != "screenshot" || got.Kind != "tool_call" {
					t.Fatalf("event %s %s", got.Type, got.Data)
				}
				row := p.inboxRow(r, run, "r2t0")
				if row.Status != "dispatched" || row.ToolName != "screenshot" || string(row.ToolInput) != `{"url":"https://example.test"}` ||
					row.Claimed || row.ClaimGeneration != 0 || row.TimeoutMS != 120000 || row.ToolCallID != "mock_r1_0" {
					t.Fatalf("inbox row %+v", row)
				}
				if string(row.AddressedTo) != `{"executor_public_id":"`+r.id+`","role":"runner"}` || !strings.Contains(string(row.Target), `"display_name":"laptop"`) {
					t.Fatalf("addressed_to %s target %s", row.AddressedTo, row.Target)
				}
				before := time.Now()
				cl := p.claim(r, run, "r2t0")
				if !strings.HasPrefix(cl.Claim.ClaimToken, "nxc_") || cl.Claim.Generation != 1 || !cl.Task.Claimed {
					t.Fatalf("claim %s", cl.Raw)
				}
				if d := cl.Claim.DeadlineAt.Sub(before); d < 119*time.Second || d > 125*time.Second {
					t.Fatalf("deadline %v after the claim, want 120 s", d)
				}
				shot := p.capture(r, "page.png", pngBytes)
				if shot.Upload.ContentType != "image/png" {
					t.Fatalf("detected %s", shot.Upload.ContentType)
				}
				logf := p.capture(r, "build.log", []byte("all green\n"))
				res := p.commit(r, run, "r2t0", cl.Claim.ClaimToken, &client.Result{
					Content: []client.ContentBlock{client.TextBlock("Captured the page."), client.LinkBlock(&shot.Upload, "page.png"),
						{Type: "resource_link", URI: logf.URI(), Name: "build.log", MimeType: "text/plain"}},
					StructuredContent: json.RawMessage(`{"width":1280,"height":800}`),
					Title:             "screenshot https://example.test",
					Metadata:          json.RawMessage(`{"checkpoint":{"cwd":"/home/me/site","branch":"main"},"viewport":"desktop"}`),
				})
				if !res.Applied || res.Task.Status != "completed" {
					t.Fatalf("commit %s", res.Raw)
				}
				tk := p.task(run, "r2t0")
				wantOut := "Captured the page.\n" + `{"mimeType":"text/plain","name":"build.log","type":"resource_link","uri":"` + logf.URI() + `"}`
				if deref(tk.Task.Output) != wantOut {
					t.Fatalf("output %q, want %q", deref(tk.Task.Output), wantOut)
				}
				var blocks []map[string]any
				if err := json.Unmarshal(tk.Task.Content, &blocks); err != nil || len(blocks) != 3 || blocks[1]["uri"] != shot.URI() {
					t.Fatalf("content %s", tk.Task.Content)
				}
				if tk.Task.StructuredContent == nil || string(*tk.Task.StructuredContent) != `{"width":1280,"height":800}` ||
					deref(tk.Task.Title) != "screenshot https://example.test" || !strings.Contains(string(tk.Task.Metadata), `"checkpoint":{"cwd":"/home/me/site","branch":"main"}`) {
					t.Fatalf("task read %s", tk.Raw)
				}
				final := p.waitRunStatus(run, "completed")
				entries := p.sealedEntries(run, "r2")
				n := len(entries)
				toolEntry := `{"role":"tool","tool_call_id":"mock_r1_0","name":"screenshot","is_error":false,"content":[{"type":"text","text":` + mustJSON(wantOut) + `}]}`
				if string(entries[n-2]) != toolEntry {
					t.Fatalf("tool entry %s\nwant %s", entries[n-2], toolEntry)
				}
				var wantUser string
				if model == "mock/scripted" {
					wantUser = fmt.Sprintf(`{"role":"user","content":[{"type":"attachment","upload_public_id":"%s","media_type":"image/png","name":"page.png","byte_size":%d,"sha256":"%s","source_task":"r2t0"}]}`,
						shot.Upload.PublicID, len(pngBytes), shot.Upload.SHA256)
					if deref(final.Answer) != "page.png" {
						t.Fatalf("answer %q", deref(final.Answer))
					}
				} else {
					wantUser = fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"[attachment page.png image/png %d bytes %s from r2t0: not readable by this model]"}]}`,
						len(pngBytes), shot.URI())
				}
				if string(entries[n-1]) != wantUser {
					t.Fatalf("attachment entry %s\nwant %s", entries[n-1], wantUser)
				}
				// The next turn, on the other model, carries the round's media in its history
				// rendered for its own model.
				otherModel, otherUser := "mock/text-only", fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"[attachment page.png image/png %d bytes %s from r2t0: not readable by this model]"}]}`, len(pngBytes), shot.URI())
				if model == "mock/text-only" {
					otherModel = "mock/scripted"
					otherUser = fmt.Sprintf(`{"role":"user","content":[{"type":"attachment","upload_public_id":"%s","media_type":"image/png","name":"page.png","byte_size":%d,"sha256":"%s","source_task":"r2t0"}]}`,
						shot.Upload.PublicID, len(pngBytes), shot.Upload.SHA256)
				}
				next, err := p.admin.PostMessage(p.ctx, "default", conv, map[string]any{"text": "Again.\n!mock\nround 1\nsay {{attachment_count}}", "model": otherModel}, "")
				if err != nil {
					t.Fatal(err)
				}
				second := p.waitRunStatus(next.Run.PublicID, "completed")
				hist := p.sealedEntries(next.Run.PublicID, "r1")
				if len(hist) != n+2 || string(hist[n-1]) != otherUser || string(hist[n-2]) != toolEntry {
					t.Fatalf("history of turn 2:\n%s\nwant at %d: %s", hist, n-1, otherUser)
				}
				if wantCount := map[string]string{"mock/scripted": "1", "mock/text-only": "0"}[otherModel]; deref(second.Answer) != wantCount {
					t.Fatalf("turn 2 answer %q", deref(second.Answer))
				}
				// The member reads the bound capture's bytes.
				b, err := p.admin.UploadBytes(p.ctx, shot.Upload.PublicID, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Body.Close()
				data, _ := io.ReadAll(b.Body)
				if b.Status != http.StatusOK || !bytes.Equal(data, pngBytes) || b.ETag != `"`+shot.Upload.SHA256+`"` {
					t.Fatalf("bytes %d %q", b.Status, b.ETag)
				}
			})
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
