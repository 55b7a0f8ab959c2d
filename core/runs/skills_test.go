package runs_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
)

// writeSkill stores a skill document through the member door, as the harness's person.
func (h *harness) writeSkill(path, body, description string) {
	h.t.Helper()
	doors := kmemory.NewDoors(kmemory.New(h.s), kmemory.NewResolver(h.s, nil), kmemory.DoorsOptions{})
	enc := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	_, _, err := doors.Write(h.ctx, kmemory.Caller{WorkspacePublicID: h.actor.WorkspacePublicID,
		Principal: kmemory.Principal{Kind: kmemory.PrincipalUser, PublicID: h.actor.PublicID}},
		&kmemory.WriteRequest{Path: enc(path), Content: enc(body), Description: enc(description),
			ExpectedPublicID: json.RawMessage(`null`), ExpectedLockVersion: json.RawMessage(`null`)})
	if err != nil {
		h.t.Fatalf("write %s: %v", path, err)
	}
}

// sealedEntries reads a round's sealed request: its entries and offered tool names.
func (h *harness) sealedEntries(run, key string) (entries []json.RawMessage, tools []string) {
	h.t.Helper()
	raw, err := h.conv.ReadRequest(h.ctx, h.actor, run, key)
	if err != nil {
		h.t.Fatal(err)
	}
	var sealed struct {
		Request struct {
			Entries        []json.RawMessage `json:"entries"`
			RequestOptions struct {
				Tools []struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"request_options"`
		} `json:"request"`
	}
	if err := json.Unmarshal(raw, &sealed); err != nil {
		h.t.Fatal(err)
	}
	for _, t := range sealed.Request.RequestOptions.Tools {
		tools = append(tools, t.Function.Name+t.Name)
	}
	return sealed.Request.Entries, tools
}

const skillsHeader = "Skills available now. Before you act on a skill listed below, load its full instructions by calling the tool named at the start of its line, for example skill, with the skill's name."

// TestKernelSkillCatalog: acceptance freezes the kernel skill catalog from the run's bindings
// (workspace, then user; the workspace's document wins a name in both), the opening entry
// carries the skills block before the prompt, the skill tool reads the frozen source, and later
// changes reach only later acceptance: an edit is read (the source still serves it), a deleted
// document is skill_unknown, a new one is not in the catalog.
func TestKernelSkillCatalog(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		h.writeSkill("workspace/skills/release-notes", "# Notes\nWrite them short.\n", "How we write release notes.")
		h.writeSkill("user/skills/release-notes", "# Mine\n", "My own release notes.")
		h.writeSkill("user/skills/commit-style", "# Commits\n", "How this team\n  writes commit messages.")
		script := "Follow the skills.\n!mock\nround 1\ncall skill {\"name\":\"release-notes\"}\ncall skill {\"name\":\"commit-style\"}\ncall skill {\"name\":\"fresh\"}\nround 2\nsay done"
		id := h.create(modelStep(script, `"kernel_tools":["nexus.skill.load","nexus.memory.read"]`)).Run.PublicID
		// After acceptance: a new skill, and the user's commit style deleted.
		h.writeSkill("workspace/skills/fresh", "# Fresh\n", "Added later.")
		st := kmemory.New(s)
		if _, err := st.Delete(h.ctx, &memory.DeleteRequest{Scope: memory.Scope{Binding: "user", Kind: memory.ScopeUser, OwnerID: h.actor.PublicID,
			Access: memory.AccessReadWrite, WorkspaceID: h.actor.WorkspacePublicID}, Name: "skills/commit-style"}); err != nil {
			t.Fatal(err)
		}
		h.drain()
		round := h.task(id, "s1-model-1")
		want := `[{"callable":"skill","name":"commit-style","description":"How this team\n  writes commit messages.","source":"user"},` +
			`{"callable":"skill","name":"release-notes","description":"How we write release notes.","source":"workspace"}]`
		if string(round.SkillCatalog) != want {
			t.Fatalf("frozen catalog %s", round.SkillCatalog)
		}
		if cont := h.task(id, "r2"); string(cont.SkillCatalog) != want {
			t.Fatalf("the continuation's catalog %s", cont.SkillCatalog)
		}
		entries, tools := h.sealedEntries(id, "s1-model-1")
		block := skillsHeader + "\n- skill / commit-style: How this team writes commit messages.\n- skill / release-notes: How we write release notes."
		wantEntry := `{"role":"user","content":[{"type":"text","text":` + mustText(block) + `},{"type":"text","text":` + mustText(script) + `}]}`
		if string(entries[0]) != wantEntry {
			t.Fatalf("opening entry:\n got %s\nwant %s", entries[0], wantEntry)
		}
		if diff := cmp.Diff([]string{"memory_read", "skill"}, tools); diff != "" {
			t.Fatalf("offered tools: %s", diff)
		}
		for key, want := range map[string][3]string{
			"r2t0": {"# Notes\nWrite them short.\n", "read workspace/skills/release-notes", "false"},
			"r2t1": {"skill_unknown: commit-style", "skill refused", "true"},
			"r2t2": {"skill_unknown: fresh", "skill refused", "true"},
		} {
			tk := h.task(id, key)
			if tk.Status != runs.StatusCompleted || deref(tk.Output) != want[0] || deref(tk.Title) != want[1] || (deref(tk.IsError) != (want[2] == "true")) {
				t.Errorf("%s: %s %q %q %v", key, tk.Status, deref(tk.Output), deref(tk.Title), deref(tk.IsError))
			}
		}
		// Later acceptance reads the documents as they are now.
		id = h.create(modelStep("Again.\n!mock\nround 1\nsay ok", `"kernel_tools":["nexus.skill.load"]`)).Run.PublicID
		h.drain()
		if got := string(h.task(id, "s1-model-1").SkillCatalog); !strings.Contains(got, `"name":"fresh"`) || strings.Contains(got, "commit-style") {
			t.Fatalf("later catalog %s", got)
		}
	})
}

// TestEmptySkillCatalog: a skill callable with an empty frozen catalog stays declared but is
// not offered and renders no skills block; a call of it still runs (the declaration is the
// gate) and answers skill_unknown.
func TestEmptySkillCatalog(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		script := "No skills here.\n!mock\nround 1\ncall skill {\"name\":\"anything\"}\nround 2\nsay {{last_result}}"
		id := h.create(modelStep(script, `"kernel_tools":["nexus.skill.load","nexus.models.list"]`)).Run.PublicID
		h.drain()
		if got := string(h.task(id, "s1-model-1").SkillCatalog); got != "[]" {
			t.Fatalf("catalog %s", got)
		}
		entries, tools := h.sealedEntries(id, "s1-model-1")
		if diff := cmp.Diff([]string{"models_list"}, tools); diff != "" {
			t.Fatalf("offered: %s", diff)
		}
		if strings.Contains(string(entries[0]), "Skills available now") {
			t.Fatalf("a skills block without skills: %s", entries[0])
		}
		if r := h.run(id); deref(r.Answer) != "skill_unknown: anything" {
			t.Fatalf("answer %q", deref(r.Answer))
		}
	})
}

// TestRunnerSkillRouting: a Runner's skill callable freezes that Runner's announced documents;
// a call of a frozen name is addressed to the Runner as tool_name skill with the callable as
// tool_alias, the Runner's profile and the scope projection; a name outside the frozen catalog
// is answered skill_unknown in the kernel; a document the Runner no longer announces fails the
// row tool_not_served at birth.
func TestRunnerSkillRouting(t *testing.T) {
	t.Parallel()
	runner := "01900000-0000-7000-8000-000000000061"
	ann := staticAnnouncements{runner + "/skill": {ExecutorPublicID: runner, DisplayName: "mac", Profile: announce.EffectReadOnly, TimeoutMS: 30000}}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{announcements: ann})
		docs := []announce.Document{{Name: "signing", Description: "Code signing on macOS."}, {Name: "release", Description: "Cutting a release."}}
		insertRunner(t, h, runner, []string{"skill"}, docs...)
		tools := `"tools":[{"type":"function","function":{"name":"mac_skill","description":"Load a skill from the Mac.","parameters":{"type":"object","properties":{"name":{"type":"string"}}}},"route":{"kind":"runner","runner_executor_public_id":"` + runner + `","tool_name":"skill"}}]`
		script := "Use the Mac's skills.\n!mock\nround 1\ncall mac_skill {\"name\":\"signing\"}\ncall mac_skill {\"name\":\"nope\"}\ncall mac_skill {\"name\":\"release\"}\nround 2\nsay done"
		id := h.create(modelStep(script, tools)).Run.PublicID
		// Before the round runs, the Runner stops announcing one document.
		err := s.Write(h.ctx, func(tx *store.Tx) error {
			ex, err := store.ExecutorByPublicID(h.ctx, tx, runner)
			if err != nil {
				return err
			}
			d := "Runs skill."
			return profiles.PutAnnouncement(h.ctx, tx, ex.ID, announce.Announcement{Tools: []announce.Tool{{Name: "skill", Description: &d,
				InputSchema: json.RawMessage(`{"type":"object"}`), EffectProfile: announce.Announced(announce.EffectReadOnly)}},
				Documents: docs[:1]}, h.clock.Now())
		})
		if err != nil {
			t.Fatal(err)
		}
		h.drain()
		want := `[{"callable":"mac_skill","name":"release","description":"Cutting a release.","source":"runner","runner_executor_public_id":"` + runner + `"},` +
			`{"callable":"mac_skill","name":"signing","description":"Code signing on macOS.","source":"runner","runner_executor_public_id":"` + runner + `"}]`
		if got := string(h.task(id, "s1-model-1").SkillCatalog); got != want {
			t.Fatalf("catalog %s", got)
		}
		entries, _ := h.sealedEntries(id, "s1-model-1")
		block := "Skills available now. Before you act on a skill listed below, load its full instructions by calling the tool named at the start of its line, for example mac_skill, with the skill's name.\n" +
			"- mac_skill / release [" + runner + "]: Cutting a release.\n- mac_skill / signing [" + runner + "]: Code signing on macOS."
		if !strings.Contains(string(entries[0]), mustText(block)) {
			t.Fatalf("opening entry %s", entries[0])
		}
		signing := h.task(id, "r2t0")
		if signing.Status != runs.StatusDispatched || deref(signing.ToolName) != "skill" || deref(signing.ToolAlias) != "mac_skill" ||
			string(signing.AddressedTo) != `{"executor_public_id":"`+runner+`","role":"runner"}` || deref(signing.TimeoutMS) != 30000 {
			t.Fatalf("routed skill row %+v %s", signing, signing.AddressedTo)
		}
		var scope struct {
			Workspace    string  `json:"workspace_public_id"`
			Conversation *string `json:"conversation_public_id"`
			User         *string `json:"user_public_id"`
		}
		row, err := store.TaskByKey(h.ctx, s.Reader(), runID(t, h, id), "r2t0")
		if err != nil || row.Scope == nil || json.Unmarshal([]byte(*row.Scope), &scope) != nil {
			t.Fatalf("scope %v %v", row, err)
		}
		if scope.Workspace != h.actor.WorkspacePublicID || scope.Conversation != nil || deref(scope.User) != h.actor.PublicID {
			t.Fatalf("scope %+v", scope)
		}
		if tk := h.task(id, "r2t1"); tk.Status != runs.StatusCompleted || deref(tk.Output) != "skill_unknown: nope" || tk.AddressedTo != nil {
			t.Fatalf("unknown name %+v", tk)
		}
		if tk := h.task(id, "r2t2"); tk.Status != runs.StatusFailed || *tk.Error != (runs.TaskError{Key: runs.KeyToolNotServed,
			Detail: "runner " + runner + " no longer serves skill release"}) {
			t.Fatalf("withdrawn document %s %+v", tk.Status, tk.Error)
		}

	})
}

// TestRunnerSkillToolGone: a Runner that no longer serves its skill tool at all fails a cataloged
// skill's row tool_not_served at birth, naming the Runner and the skill.
func TestRunnerSkillToolGone(t *testing.T) {
	t.Parallel()
	runner := "01900000-0000-7000-8000-000000000062"
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{announcements: staticAnnouncements{}})
		insertRunner(t, h, runner, []string{"skill"}, announce.Document{Name: "signing", Description: "Code signing on macOS."})
		tools := `"tools":[{"type":"function","function":{"name":"mac_skill","description":"Load a skill from the Mac.","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"` + runner + `","tool_name":"skill"}}]`
		id := h.create(modelStep("Sign.\n!mock\nround 1\ncall mac_skill {\"name\":\"signing\"}\nround 2\nsay done", tools)).Run.PublicID
		h.drain()
		if tk := h.task(id, "r2t0"); tk.Status != runs.StatusFailed || *tk.Error != (runs.TaskError{Key: runs.KeyToolNotServed,
			Detail: "runner " + runner + " no longer serves skill signing"}) {
			t.Fatalf("unserved skill tool %s %+v", tk.Status, tk.Error)
		}
	})
}

func mustText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func runID(t *testing.T, h *harness, publicID string) int64 {
	t.Helper()
	r, err := store.RunByPublicID(h.ctx, h.s.Reader(), h.actor.WorkspaceID, publicID)
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// TestSkillAlias: a profile alias of the skill tool with its own parameter (Claude Code's
// Skill({skill})) has its own frozen catalog entries and skills block spelling; a call under it
// runs as skill with the input mapped onto name and the alias recorded.
func TestSkillAlias(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		h.writeSkill("workspace/skills/review", "# Review\nRead it twice.\n", "How we review.")
		tools := `"tools":[{"type":"function","function":{"name":"Skill"},"canonical":"nexus.skill.load","params":{"skill":{"maps_to":"name","description":"The skill to load."}}}]`
		id := h.create(modelStep("Review.\n!mock\nround 1\ncall Skill {\"skill\":\"review\"}\nround 2\nsay {{last_result}}", tools)).Run.PublicID
		h.drain()
		if got := string(h.task(id, "s1-model-1").SkillCatalog); got != `[{"callable":"Skill","name":"review","description":"How we review.","source":"workspace"}]` {
			t.Fatalf("catalog %s", got)
		}
		entries, _ := h.sealedEntries(id, "s1-model-1")
		if !strings.Contains(string(entries[0]), "for example Skill, with the skill's name.\\n- Skill / review: How we review.") {
			t.Fatalf("opening entry %s", entries[0])
		}
		tk := h.task(id, "r2t0")
		if deref(tk.ToolName) != "skill" || deref(tk.ToolAlias) != "Skill" || string(*tk.ToolInput) != `{"name":"review"}` ||
			deref(tk.Output) != "# Review\nRead it twice.\n" || deref(tk.Title) != "read workspace/skills/review" {
			t.Fatalf("aliased call %+v", tk)
		}
	})
}
