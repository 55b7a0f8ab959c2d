package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestIdentityAndPlanes is scenario 1: the executor's identity, the sealed planes, revocation.
func TestIdentityAndPlanes(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			res, err := p.admin.CreateExecutor(p.ctx, &client.CreateExecutorRequest{Kind: "runner", DisplayName: "laptop"})
			if err != nil {
				t.Fatal(err)
			}
			tok := res.Token
			if !strings.HasPrefix(tok, "nxe_") {
				t.Fatalf("token %q", tok)
			}
			st, _, body := p.raw("GET", "/agent_api/v1/executor", tok, nil, nil)
			var id struct {
				Executor struct {
					PublicID string `json:"public_id"`
					Kind     string `json:"kind"`
				} `json:"executor"`
				MeasuredAt string `json:"measured_at"`
			}
			if st != 200 || json.Unmarshal(body, &id) != nil || id.Executor.PublicID != res.Executor.PublicID || id.Executor.Kind != "runner" || id.MeasuredAt == "" {
				t.Fatalf("identity %d %s", st, body)
			}
			if st, _, body := p.raw("GET", "/agent_api/v1/executor", p.srv.AdminToken, nil, nil); st != 401 || errorCode(body) != "unauthorized" {
				t.Fatalf("member token on the executor plane: %d %s", st, body)
			}
			if st, _, body := p.raw("GET", "/agent_api/v1/workspaces/default/runs", tok, nil, nil); st != 401 || errorCode(body) != "unauthorized" {
				t.Fatalf("executor token on the member plane: %d %s", st, body)
			}
			if _, err := p.admin.RevokeExecutor(p.ctx, res.Executor.PublicID); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/agent_api/v1/executor", "/agent_api/v1/executor/inbox", "/agent_api/v1/executor/announcement", "/agent_api/v1/executor/events"} {
				if st, _, body := p.raw("GET", path, tok, nil, nil); st != 401 || errorCode(body) != "unauthorized" {
					t.Fatalf("revoked token on %s: %d %s", path, st, body)
				}
			}
		})
	}
}

// TestAnnouncementRefusalsAreWholeOrNothing is scenario 2: every refusal names its word and path,
// and the stored announcement stays exactly as it was.
func TestAnnouncementRefusalsAreWholeOrNothing(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			first, err := r.c.Announce(p.ctx, announce.Announcement{Tools: []announce.Tool{tool("screenshot", 120000)},
				Environment: json.RawMessage(`{"os":"linux"}`), Documents: []announce.Document{{Name: "deploy-guide", Description: "How to deploy."}}})
			if err != nil {
				t.Fatal(err)
			}
			entry := func(name string) string {
				return `{"name":"` + name + `","effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"open","idempotency":"intrinsic","reconciliation":"none"}}`
			}
			many := make([]string, 513)
			for i := range many {
				many[i] = entry(fmt.Sprintf("t%d", i))
			}
			cases := []struct {
				name, body, code, path string
				status, errors         int
			}{
				{"reserved", `{"tools":[` + strings.Join([]string{entry("delegate_task"), entry("nexus.graph.delegate_task"), entry("tool_search"), entry("runners_list"), entry("spawn")}, ",") + `]}`,
					"reserved_namespace", "tools[0].name", 422, 5},
				{"idempotency", `{"tools":[` + entry("ok") + `,{"name":"x","effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"open","idempotency":"sometimes","reconciliation":"none"}}]}`,
					"invalid_announcement", "tools[1].effect_profile.idempotency", 422, 1},
				{"dotted", `{"tools":[` + entry("nexus.memory.read") + `]}`, "invalid_announcement", "tools[0].name", 422, 1},
				{"documents", `{"tools":[],"documents":[{"name":"a","description":"x"},{"name":"a","description":"y"}]}`, "invalid_announcement", "documents[1]", 422, 1},
				{"bound", `{"tools":[` + strings.Join(many, ",") + `]}`, "validation_failed", "tools", 422, 1},
				{"missing", `{}`, "parameter_missing", "tools", 400, 0},
				{"not an object", `[1]`, "parameter_invalid", "", 400, 0},
			}
			for _, c := range cases {
				st, _, body := p.raw("PUT", "/agent_api/v1/executor/announcement", tokenOf(r), []byte(c.body), map[string]string{"Content-Type": "application/json"})
				var env struct {
					Error struct {
						Code   string            `json:"code"`
						Path   string            `json:"path"`
						Name   string            `json:"name"`
						Errors []json.RawMessage `json:"errors"`
					} `json:"error"`
				}
				_ = json.Unmarshal(body, &env)
				if st != c.status || env.Error.Code != c.code || env.Error.Path != c.path || len(env.Error.Errors) != c.errors {
					t.Fatalf("%s: %d %s", c.name, st, body)
				}
				if c.code == "reserved_namespace" && env.Error.Name != "delegate_task" {
					t.Fatalf("%s: name %q", c.name, env.Error.Name)
				}
				now, err := r.c.Announcement(p.ctx)
				if err != nil {
					t.Fatal(err)
				}
				if string(mustJSON(now.Announcement)) != string(mustJSON(first.Announcement)) {
					t.Fatalf("%s changed the announcement: %s", c.name, now.Raw)
				}
			}
			if len(first.Announcement.Tools) != 1 || first.Announcement.Tools[0].Name != "screenshot" {
				t.Fatalf("stored %s", first.Raw)
			}
			// A body over 1 MiB is refused before anything else.
			big := `{"tools":[],"environment":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`
			if st, _, body := p.raw("PUT", "/agent_api/v1/executor/announcement", tokenOf(r), []byte(big), nil); st != http.StatusRequestEntityTooLarge || errorCode(body) != "content_too_large" {
				t.Fatalf("big body: %d %s", st, body)
			}
			// Member discovery serves the announced fields.
			got, err := p.admin.Executor(p.ctx, r.id)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Executor.ServedTools) != 1 || string(got.Executor.Environment) != `{"os":"linux"}` || len(got.Executor.ServedDocuments) != 1 || got.Executor.AnnouncedAt == nil {
				t.Fatalf("discovery %s", got.Raw)
			}
			wantTool := `{"name":"screenshot","description":"Run screenshot.","input_schema":{"type":"object"},"effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"open","idempotency":"intrinsic","reconciliation":"none"},"timeout_ms":120000}`
			if string(got.Executor.ServedTools[0]) != wantTool {
				t.Fatalf("served tool %s", got.Executor.ServedTools[0])
			}
			// {"tools": []} clears the list; omitted environment and documents store {} and [].
			cleared, err := r.c.AnnounceRaw(p.ctx, json.RawMessage(`{"tools":[]}`))
			if err != nil || len(cleared.Announcement.Tools) != 0 || string(cleared.Announcement.Environment) != `{}` || len(cleared.Announcement.Documents) != 0 {
				t.Fatalf("cleared %s %v", cleared.Raw, err)
			}
		})
	}
}

// TestAdmittedKernelNames is scenario 3: a tool provider may announce the memory names and
// models_list, but the kernel answers them: no inbox row, no addressee.
func TestAdmittedKernelNames(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			pr := p.executor("tool_provider", "memory-box")
			var tools []announce.Tool
			for _, n := range []string{"memory_ls", "memory_read", "memory_grep", "memory_write", "memory_edit", "memory_delete", "models_list"} {
				tools = append(tools, tool(n, 0))
			}
			p.announce(pr, tools...)
			run := p.modelRun("mock/scripted", "!mock\nround 1\ncall memory_read {\"path\":\"workspace/none.md\"}\ncall models_list {}\nround 2\nsay done",
				nil, []string{"nexus.memory.read", "nexus.models.list"}, "bypass", nil)
			p.waitRunStatus(run, "completed")
			for _, key := range []string{"r2t0", "r2t1"} {
				tk := p.task(run, key)
				if tk.Task.Status != "completed" || strings.Contains(string(tk.Raw), `"addressed_to"`) {
					t.Fatalf("%s: %s", key, tk.Raw)
				}
			}
			if sc := p.task(run, "r2t1").Task.StructuredContent; sc == nil || !strings.Contains(string(*sc), `"mock/scripted"`) || !strings.Contains(string(*sc), `"mock/text-only"`) {
				t.Fatalf("models_list structured content %v", sc)
			}
			if keys := p.inboxKeys(pr, run); len(keys) != 0 {
				t.Fatalf("inbox %v", keys)
			}
		})
	}
}
