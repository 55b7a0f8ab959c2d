package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/jmoiron/sqlx"

	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/plugins"
	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
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

// TestMemberMemoryThroughOverride reads and writes a workspace's memory through the member doors
// after its override hands memory to memory-fs and, with PostgreSQL configured, to
// memory-postgres: list, show and grep answer what the plugin's store holds (and what the
// agents' memory calls read), never kernel memory; writes, edits and deletes land in that store
// under their conditions, and the agents read them; skill documents stay in kernel memory, read
// and written there.
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
			p.checkProviderWrites(func() map[string]string { return fsDocuments(t, p.fsRoot, "workspace", ws) })
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
				p.checkProviderWrites(func() map[string]string {
					rows = rows[:0]
					if err := db.Select(&rows, `SELECT name, content FROM `+p.pgSchema+`.documents WHERE owner_id = $1 ORDER BY name`, ws); err != nil {
						t.Fatal(err)
					}
					out := map[string]string{}
					for _, r := range rows {
						out[r.Name] = r.Content
					}
					return out
				})
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
		if doc.PublicID == nil || len(*doc.PublicID) != 36 || doc.Description != nil || doc.Bytesize != int64(len(want[doc.Path])) || doc.LockVersion < 1 {
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

	// A provider's documents are written through the doors, under the same conditions as
	// kernel memory's (TestMemberMemoryWrites).
	doc := docs[len(docs)-1]
	code, out = p.memoryDoor("write", map[string]any{"path": doc.Path, "content": "overwritten", "expected_public_id": nil, "expected_lock_version": nil})
	wantRefusal(t, "create over a document", code, out, http.StatusConflict, "stale_object")
	code, out = p.memoryDoor("show", map[string]any{"path": doc.Path})
	if code != http.StatusOK || !strings.Contains(string(out), jsonString(want[doc.Path])) {
		t.Fatalf("after the refused write: %d %s", code, out)
	}
}

// checkProviderWrites writes, edits and deletes workspace/door.md through the doors while the
// workspace's memory is a plugin's, checking each step against the store itself (stored answers
// its workspace documents, name → content) and against what an agent reads: a create, a replace
// keeping the public id, a stale replace and a stale delete (409 stale_object, nothing changed),
// an edit, and a delete.
func (p *pluginServer) checkProviderWrites(stored func() map[string]string) {
	t := p.t
	t.Helper()
	code, out := p.memoryDoor("write", map[string]any{"path": "workspace/door.md", "content": "from a person\n",
		"expected_public_id": nil, "expected_lock_version": nil})
	var created struct {
		Memory doorDoc `json:"memory"`
	}
	if code != http.StatusCreated || json.Unmarshal(out, &created) != nil || created.Memory.PublicID == nil || created.Memory.LockVersion != 1 ||
		created.Memory.Bytesize != 14 || created.Memory.Description != nil {
		t.Fatalf("create through the plugin: %d %s", code, out)
	}
	id := *created.Memory.PublicID
	if got := stored()["door.md"]; got != "from a person\n" {
		t.Fatalf("the store holds %q after the create", got)
	}
	code, out = p.memoryDoor("write", map[string]any{"path": "workspace/door.md", "content": "replaced\n",
		"expected_public_id": id, "expected_lock_version": 1})
	var replaced struct {
		Memory doorDoc `json:"memory"`
	}
	if code != http.StatusOK || json.Unmarshal(out, &replaced) != nil || deref(replaced.Memory.PublicID) != id || replaced.Memory.LockVersion != 2 {
		t.Fatalf("replace through the plugin: %d %s", code, out)
	}
	code, out = p.memoryDoor("write", map[string]any{"path": "workspace/door.md", "content": "stale",
		"expected_public_id": id, "expected_lock_version": 1})
	wantRefusal(t, "a stale replace", code, out, http.StatusConflict, "stale_object")
	code, out = p.memoryDoor("delete", map[string]any{"path": "workspace/door.md", "expected_public_id": "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", "expected_lock_version": 2})
	wantRefusal(t, "a delete of another document", code, out, http.StatusConflict, "stale_object")
	code, out = p.memoryDoor("edit", map[string]any{"path": "workspace/door.md", "old_text": "absent", "new_text": "x",
		"expected_public_id": id, "expected_lock_version": 2})
	wantRefusal(t, "an edit whose text is absent", code, out, http.StatusUnprocessableEntity, memsdk.CodeEditNotFound)
	if got := stored()["door.md"]; got != "replaced\n" {
		t.Fatalf("the store holds %q after the refused calls", got)
	}
	code, out = p.memoryDoor("edit", map[string]any{"path": "workspace/door.md", "old_text": "replaced", "new_text": "edited",
		"expected_public_id": id, "expected_lock_version": 2})
	if code != http.StatusOK || !strings.Contains(string(out), `"lock_version":3`) {
		t.Fatalf("edit through the plugin: %d %s", code, out)
	}
	// What a person wrote is what an agent reads.
	created2, err := p.admin.CreateRun(p.ctx, "default", memoryRun(`Read.
!mock
round 1
call memory_read {"path":"workspace/door.md"}
round 2
say {{last_result}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if run := waitRun(t, p.admin, created2.Run.PublicID, 30*time.Second); run.Status != "completed" || deref(run.Answer) != "edited\n" {
		t.Fatalf("the agent read %s %q", run.Status, deref(run.Answer))
	}
	code, out = p.memoryDoor("delete", map[string]any{"path": "workspace/door.md", "expected_public_id": id, "expected_lock_version": 3})
	if code != http.StatusNoContent {
		t.Fatalf("delete through the plugin: %d %s", code, out)
	}
	if _, ok := stored()["door.md"]; ok {
		t.Fatal("door.md is still in the store after its delete")
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

// TestMemberMemoryProviderRefusals pins the words a door answers when the workspace's memory
// provider cannot be reached for a person: memory_provider_unreachable (409) for an executor of
// its own announcing the memory names, memory_unavailable (503) while the memory plugin is not
// ready on this instance, and memory_conditions_unsupported (409) for a write through a memory
// plugin built before protocol 1.3, whose documents the doors still read. Skill documents, in
// kernel memory, are read and written all the same.
func TestMemberMemoryProviderRefusals(t *testing.T) {
	t.Parallel()
	// A restart backoff long enough that a killed plugin stays down for the test.
	timings := pluginTimings
	timings.BackoffBase, timings.BackoffMax = time.Minute, time.Minute
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf(`
plugin %q {
  kind    = "memory"
  command = %q
  env     = { %s = %q, GORACE = "atexit_sleep_ms=0" }
  config  = { root = %q, fsync = false }
}
`, oldMemoryPluginName, exe, e2ePluginEnv, oldMemoryPluginName, filepath.Join(t.TempDir(), "old-fs"))
	p := startPluginsWith(t, store.SQLite, old, pluginStart{level: hclog.Debug, timings: timings})
	p.waitPlugin(oldMemoryPluginName, func(s plugins.Status) bool { return s.State == plugins.StateReady })
	if minor := p.statuses()[oldMemoryPluginName].Info.ProtocolMinor; minor != 2 {
		t.Fatalf("the old plugin reports minor %d", minor)
	}

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

	lock = p.putOverride(p.executorOf(oldMemoryPluginName), lock)
	p.agentsWrite(`Note.
!mock
round 1
call memory_write {"path":"workspace/old.md","content":"kept by 1.2"}
round 2
say done`)
	if docs := p.doorList(""); paths(docs) != "workspace/old.md" || docs[0].PublicID != nil || docs[0].LockVersion != 1 {
		t.Fatalf("a 1.2 plugin's documents: %+v", docs)
	}
	code, out := p.memoryDoor("write", map[string]any{"path": "workspace/old.md", "content": "x", "expected_public_id": nil, "expected_lock_version": nil})
	wantRefusal(t, "a write through a 1.2 plugin", code, out, http.StatusConflict, memory.CodeConditionsUnsupported)
	code, out = p.memoryDoor("edit", map[string]any{"path": "workspace/old.md", "old_text": "kept", "new_text": "x",
		"expected_public_id": "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", "expected_lock_version": 1})
	wantRefusal(t, "an edit through a 1.2 plugin", code, out, http.StatusConflict, memory.CodeConditionsUnsupported)
	code, out = p.memoryDoor("delete", map[string]any{"path": "workspace/old.md",
		"expected_public_id": "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", "expected_lock_version": 1})
	wantRefusal(t, "a delete through a 1.2 plugin", code, out, http.StatusConflict, memory.CodeConditionsUnsupported)
	if code, out := p.memoryDoor("show", map[string]any{"path": "workspace/old.md"}); code != http.StatusOK || !strings.Contains(string(out), `"content":"kept by 1.2"`) {
		t.Fatalf("after the refused writes: %d %s", code, out)
	}
	// A skill is written in kernel memory whatever the provider.
	if code, out := p.memoryDoor("write", map[string]any{"path": "workspace/skills/triage", "content": "Sort by impact.", "description": "How we triage.",
		"expected_public_id": nil, "expected_lock_version": nil}); code != http.StatusCreated {
		t.Fatalf("a skill under a 1.2 plugin: %d %s", code, out)
	}

	p.putOverride(p.executorOf("memory-fs"), lock)
	if docs := p.doorList(""); len(docs) != 0 {
		t.Fatalf("an empty memory-fs store: %+v", docs)
	}
	if err := killPID(*p.statuses()["memory-fs"].PID); err != nil {
		t.Fatal(err)
	}
	p.waitPlugin("memory-fs", func(s plugins.Status) bool { return s.State != plugins.StateReady })
	code, out = p.memoryDoor("", map[string]any{})
	wantRefusal(t, "a plugin not ready", code, out, http.StatusServiceUnavailable, memsdk.CodeUnavailable)
	code, out = p.memoryDoor("show", map[string]any{"path": "user/x.md"})
	wantRefusal(t, "show while not ready", code, out, http.StatusServiceUnavailable, memsdk.CodeUnavailable)
	code, out = p.memoryDoor("write", map[string]any{"path": "workspace/x.md", "content": "x", "expected_public_id": nil, "expected_lock_version": nil})
	wantRefusal(t, "a write while not ready", code, out, http.StatusServiceUnavailable, memsdk.CodeUnavailable)
	if docs := p.doorList("workspace/skills/"); paths(docs) != "workspace/skills/triage" {
		t.Fatalf("skills while the plugin is down: %+v", docs)
	}
}

// oldMemoryPluginName is a memory plugin built before protocol 1.3 (memory-fs served at minor
// 2), and the value of e2ePluginEnv that makes this test binary serve it.
const oldMemoryPluginName = "memory-v1-2"

// serveOldMemoryPlugin serves memory-fs exactly as a binary built with protocol 1.2 does.
func serveOldMemoryPlugin() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: plugin.Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{plugin.ProtocolMajor: {
			plugin.KindMemory.PluginSetKey(): memsdk.ServerPluginAtMinor(memsdk.ServeConfig{
				Info: plugin.Info{Name: "memory-fs-1.2", Version: "1.2.0"}, Configure: memoryfs.Configure,
			}, 2),
		}},
		GRPCServer: goplugin.DefaultGRPCServer,
	})
	os.Exit(0)
}
