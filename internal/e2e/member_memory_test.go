package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jmoiron/sqlx"

	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/plugins"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// memoryDoor calls a member memory door as the admin: GET …/memory with a prefix when body is
// nil and verb is "", else POST …/memory/<verb> with {"memory": body}.
func (p *pluginServer) memoryDoor(verb string, body map[string]any) (int, []byte) {
	p.t.Helper()
	path := "/agent_api/v1/workspaces/default/memory"
	if verb == "" {
		prefix, _ := body["prefix"].(string)
		code, _, out := p.raw(http.MethodGet, path+"?prefix="+prefix, p.srv.AdminToken, nil, nil)
		return code, out
	}
	raw, err := json.Marshal(map[string]any{"memory": body})
	if err != nil {
		p.t.Fatal(err)
	}
	code, _, out := p.raw(http.MethodPost, path+"/"+verb, p.srv.AdminToken, raw, nil)
	return code, out
}

// doorDoc is a document as the doors serve it.
type doorDoc struct {
	Path        string  `json:"path"`
	PublicID    *string `json:"public_id"`
	LockVersion int64   `json:"lock_version"`
	Bytesize    int64   `json:"bytesize"`
	Description *string `json:"description"`
	WrittenAt   string  `json:"written_at"`
	Content     *string `json:"content"`
}

// doorList lists the documents under a prefix: path → document.
func (p *pluginServer) doorList(prefix string) []doorDoc {
	p.t.Helper()
	code, out := p.memoryDoor("", map[string]any{"prefix": prefix})
	if code != http.StatusOK {
		p.t.Fatalf("list %q: %d %s", prefix, code, out)
	}
	var doc struct {
		Memory []doorDoc `json:"memory"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		p.t.Fatal(err)
	}
	return doc.Memory
}

func paths(docs []doorDoc) string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Path
	}
	return strings.Join(out, ",")
}

// wantRefusal checks a door's status and word.
func wantRefusal(t *testing.T, what string, code int, body []byte, status int, word string) {
	t.Helper()
	if code != status || errorCode(body) != word {
		t.Fatalf("%s: %d %s, want %d %s", what, code, body, status, word)
	}
}

// TestMemberMemoryThroughOverride reads a workspace's memory through the member doors after its
// override hands memory to memory-fs and, with PostgreSQL configured, to memory-postgres: list,
// show and grep answer what the plugin's store holds (and what the agents' memory calls read),
// never kernel memory; skill documents stay in kernel memory, read and written there; a write of
// a provider's document is refused memory_conditions_unsupported and changes nothing.
func TestMemberMemoryThroughOverride(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := startPlugins(t, d, "")
			ws := p.workspaceID()
			adminUser := p.adminUserID()

			// Before the override: a kernel document and a kernel skill.
			if code, out := p.memoryDoor("write", map[string]any{"path": "workspace/kernel.md", "content": "kernel only",
				"expected_public_id": nil, "expected_lock_version": nil}); code != http.StatusCreated {
				t.Fatalf("kernel write: %d %s", code, out)
			}
			if code, out := p.memoryDoor("write", map[string]any{"path": "workspace/skills/deploy", "content": "Run make deploy.",
				"description": "How we deploy.", "expected_public_id": nil, "expected_lock_version": nil}); code != http.StatusCreated {
				t.Fatalf("skill write: %d %s", code, out)
			}

			lock := p.putOverride(p.executorOf("memory-fs"), 0)
			p.agentsWrite(`Note.
!mock
round 1
call memory_write {"path":"workspace/notes.md","content":"alpha\nbeta\n"}
call memory_write {"path":"user/prefs.md","content":"terse beta"}
round 2
call memory_edit {"path":"workspace/notes.md","old_text":"alpha","new_text":"gamma"}
round 3
say done`)
			fsWorkspace := fsDocuments(t, p.fsRoot, "workspace", ws)
			fsUser := fsDocuments(t, p.fsRoot, "user", adminUser)
			if fsWorkspace["notes.md"] != "gamma\nbeta\n" || fsUser["prefs.md"] != "terse beta" {
				t.Fatalf("memory-fs holds %v and %v", fsWorkspace, fsUser)
			}
			p.checkProviderReads(map[string]string{"user/prefs.md": fsUser["prefs.md"], "workspace/notes.md": fsWorkspace["notes.md"]})
			// The edit advanced the provider's version.
			for _, doc := range p.doorList("workspace/") {
				if doc.Path == "workspace/notes.md" && doc.LockVersion != 2 {
					t.Fatalf("notes.md version: %+v", doc)
				}
			}

			if p.pgSchema != "" {
				lock = p.putOverride(p.executorOf("memory-pg"), lock)
				p.agentsWrite(`Note in postgres.
!mock
round 1
call memory_write {"path":"workspace/pg.md","content":"in postgres\nbeta"}
round 2
say done`)
				db, err := sqlx.Open("postgres", storetest.PostgresURL())
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = db.Close() }()
				var rows []struct {
					Name    string `db:"name"`
					Content string `db:"content"`
				}
				if err := db.Select(&rows, `SELECT name, content FROM `+p.pgSchema+`.documents WHERE owner_id = $1 ORDER BY name`, ws); err != nil {
					t.Fatal(err)
				}
				if len(rows) != 1 || rows[0].Name != "pg.md" {
					t.Fatalf("memory-postgres documents: %+v", rows)
				}
				// Documents are not copied between stores: the doors now read memory-postgres alone.
				p.checkProviderReads(map[string]string{"workspace/pg.md": rows[0].Content})
			}

			// Cleared, the doors read kernel memory again.
			p.putOverride("", lock)
			if got := paths(p.doorList("")); got != "workspace/kernel.md,workspace/skills/deploy" {
				t.Fatalf("kernel memory after clearing: %s", got)
			}
		})
	}
}

// checkProviderReads checks the doors against the provider's documents (path → content, user/
// before workspace/): list, show and grep answer them and nothing of kernel memory, whose
// skill documents the doors still read and write there.
func (p *pluginServer) checkProviderReads(want map[string]string) {
	t := p.t
	t.Helper()
	var wantPaths []string
	for path := range want {
		wantPaths = append(wantPaths, path)
	}
	slices.Sort(wantPaths)
	docs := p.doorList("")
	if got := paths(docs); got != strings.Join(wantPaths, ",") {
		t.Fatalf("list: %s, want %s", got, strings.Join(wantPaths, ","))
	}
	for _, doc := range docs {
		if doc.PublicID != nil || doc.Description != nil || doc.Bytesize != int64(len(want[doc.Path])) || doc.LockVersion < 1 {
			t.Fatalf("a provider's document: %+v", doc)
		}
		if _, err := time.Parse(time.RFC3339Nano, doc.WrittenAt); err != nil {
			t.Fatalf("written_at %q: %v", doc.WrittenAt, err)
		}
		code, out := p.memoryDoor("show", map[string]any{"path": doc.Path})
		var shown struct {
			Memory doorDoc `json:"memory"`
		}
		if code != http.StatusOK || json.Unmarshal(out, &shown) != nil || shown.Memory.Content == nil || *shown.Memory.Content != want[doc.Path] {
			t.Fatalf("show %s: %d %s", doc.Path, code, out)
		}
	}
	// The kernel's own document is not what the agents read.
	code, out := p.memoryDoor("show", map[string]any{"path": "workspace/kernel.md"})
	wantRefusal(t, "show of a kernel document", code, out, http.StatusNotFound, memsdk.CodeNotFound)

	// grep searches the provider's lines, user/ before workspace/.
	code, out = p.memoryDoor("grep", map[string]any{"pattern": "beta"})
	var grep struct {
		Matches []struct {
			Path       string `json:"path"`
			LineNumber int    `json:"line_number"`
			Text       string `json:"text"`
		} `json:"matches"`
		Truncated bool `json:"truncated"`
	}
	if code != http.StatusOK || json.Unmarshal(out, &grep) != nil || grep.Truncated {
		t.Fatalf("grep: %d %s", code, out)
	}
	var wantMatches, gotMatches []string
	for _, path := range wantPaths {
		for i, line := range strings.Split(want[path], "\n") {
			if strings.Contains(line, "beta") {
				wantMatches = append(wantMatches, fmt.Sprintf("%s:%d:%s", path, i+1, line))
			}
		}
	}
	for _, m := range grep.Matches {
		gotMatches = append(gotMatches, fmt.Sprintf("%s:%d:%s", m.Path, m.LineNumber, m.Text))
	}
	if strings.Join(gotMatches, "|") != strings.Join(wantMatches, "|") || len(wantMatches) == 0 {
		t.Fatalf("grep: %v, want %v", gotMatches, wantMatches)
	}

	// Skills stay in kernel memory: listed under skills/, shown, and written there.
	skills := p.doorList("workspace/skills/")
	if len(skills) != 1 || skills[0].Path != "workspace/skills/deploy" || skills[0].PublicID == nil || deref(skills[0].Description) != "How we deploy." {
		t.Fatalf("skills under the override: %+v", skills)
	}
	code, out = p.memoryDoor("show", map[string]any{"path": "workspace/skills/deploy"})
	if code != http.StatusOK || !strings.Contains(string(out), `"content":"Run make deploy."`) {
		t.Fatalf("show a skill: %d %s", code, out)
	}
	code, out = p.memoryDoor("write", map[string]any{"path": "workspace/skills/deploy", "content": "Run make deploy.",
		"description": "How we deploy.", "expected_public_id": *skills[0].PublicID, "expected_lock_version": skills[0].LockVersion})
	if code != http.StatusOK {
		t.Fatalf("replace a skill under the override: %d %s", code, out)
	}

	// A provider's documents are not written through the doors; nothing changes.
	first := wantPaths[len(wantPaths)-1]
	code, out = p.memoryDoor("write", map[string]any{"path": first, "content": "overwritten", "expected_public_id": nil, "expected_lock_version": nil})
	wantRefusal(t, "write", code, out, http.StatusConflict, memory.CodeConditionsUnsupported)
	code, out = p.memoryDoor("edit", map[string]any{"path": first, "old_text": "beta", "new_text": "delta",
		"expected_public_id": "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", "expected_lock_version": 1})
	wantRefusal(t, "edit", code, out, http.StatusConflict, memory.CodeConditionsUnsupported)
	code, out = p.memoryDoor("delete", map[string]any{"path": first,
		"expected_public_id": "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", "expected_lock_version": 1})
	wantRefusal(t, "delete", code, out, http.StatusConflict, memory.CodeConditionsUnsupported)
	code, out = p.memoryDoor("show", map[string]any{"path": first})
	if code != http.StatusOK || !strings.Contains(string(out), jsonString(want[first])) {
		t.Fatalf("after the refused writes: %d %s", code, out)
	}
}

// agentsWrite runs a memory script to completion as the admin.
func (p *pluginServer) agentsWrite(script string) {
	p.t.Helper()
	created, err := p.admin.CreateRun(p.ctx, "default", memoryRun(script), "")
	if err != nil {
		p.t.Fatal(err)
	}
	if run := waitRun(p.t, p.admin, created.Run.PublicID, 30*time.Second); run.Status != "completed" {
		p.t.Fatalf("memory run: %s", run.Status)
	}
}

// adminUserID is the admin's public id: the owner of its user/ root.
func (p *pluginServer) adminUserID() string {
	p.t.Helper()
	me, err := p.admin.Me(p.ctx)
	if err != nil {
		p.t.Fatal(err)
	}
	return me.Principal.PublicID
}

// TestMemberMemoryProviderRefusals pins the two words a door answers when the workspace's memory
// provider cannot be read for a person: memory_provider_unreachable (409) for an executor of its
// own announcing the memory names, and memory_unavailable (503) while the memory plugin is not
// ready on this instance. Skill documents, in kernel memory, are read all the same.
func TestMemberMemoryProviderRefusals(t *testing.T) {
	t.Parallel()
	// A restart backoff long enough that a killed plugin stays down for the test.
	timings := pluginTimings
	timings.BackoffBase, timings.BackoffMax = time.Minute, time.Minute
	p := startPluginsWith(t, store.SQLite, "", pluginStart{level: hclog.Debug, timings: timings})

	box := p.executor("tool_provider", "memory box")
	p.announce(box, tool("memory_ls", 0), tool("memory_read", 0), tool("memory_grep", 0), tool("memory_write", 0),
		tool("memory_edit", 0), tool("memory_delete", 0))
	lock := p.putOverride(box.id, 0)
	for _, call := range []struct {
		verb string
		body map[string]any
	}{
		{"", map[string]any{}},
		{"show", map[string]any{"path": "workspace/notes.md"}},
		{"grep", map[string]any{"pattern": "x"}},
	} {
		code, out := p.memoryDoor(call.verb, call.body)
		wantRefusal(t, "an executor of its own: "+call.verb, code, out, http.StatusConflict, memory.CodeProviderUnreachable)
		if !strings.Contains(string(out), box.id) {
			t.Fatalf("the refusal does not name the executor: %s", out)
		}
	}
	if docs := p.doorList("workspace/skills/"); len(docs) != 0 {
		t.Fatalf("skills: %+v", docs)
	}

	p.putOverride(p.executorOf("memory-fs"), lock)
	if docs := p.doorList(""); len(docs) != 0 {
		t.Fatalf("an empty memory-fs store: %+v", docs)
	}
	if err := killPID(*p.statuses()["memory-fs"].PID); err != nil {
		t.Fatal(err)
	}
	p.waitPlugin("memory-fs", func(s plugins.Status) bool { return s.State != plugins.StateReady })
	code, out := p.memoryDoor("", map[string]any{})
	wantRefusal(t, "a plugin not ready", code, out, http.StatusServiceUnavailable, memsdk.CodeUnavailable)
	code, out = p.memoryDoor("show", map[string]any{"path": "user/x.md"})
	wantRefusal(t, "show while not ready", code, out, http.StatusServiceUnavailable, memsdk.CodeUnavailable)
	if docs := p.doorList("user/skills/"); len(docs) != 0 {
		t.Fatalf("skills while the plugin is down: %+v", docs)
	}
}
