package memory_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// doorWrite writes through the member door, as a person of the world, and fails on refusal.
func doorWrite(t *testing.T, d *memory.Doors, c memory.Caller, path, content string, description any) {
	t.Helper()
	req := &memory.WriteRequest{
		Path:                mustJSON(t, path),
		Content:             mustJSON(t, content),
		ExpectedPublicID:    json.RawMessage(`null`),
		ExpectedLockVersion: json.RawMessage(`null`),
	}
	if description != nil {
		req.Description = mustJSON(t, description)
	}
	if _, _, err := d.Write(context.Background(), c, req); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKernelSkillCatalog builds the kernel skill rows of a golden acceptance and reads the frozen
// kernel entries: the workspace's document wins a name in both roots, entries are ordered by name,
// and documents that are not skills are skipped.
func TestKernelSkillCatalog(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		w := newWorld(t, db)
		s := memory.New(db)
		r := memory.NewResolver(db, nil)
		doors := memory.NewDoors(s, r, memory.DoorsOptions{})
		caller := memory.Caller{WorkspacePublicID: w.workspace, Principal: memory.Principal{Kind: memory.PrincipalUser, PublicID: w.person}}

		doorWrite(t, doors, caller, "workspace/skills/commit-style", "# Commits\n", "How this team writes commit messages.")
		doorWrite(t, doors, caller, "workspace/skills/deploy-notes", "# Deploy\n", "The workspace's copy.")
		doorWrite(t, doors, caller, "user/skills/review-checklist", "# Review\n", "Review:   how I check\n\n  a change.")
		doorWrite(t, doors, caller, "user/skills/commit-style", "# Mine\n", "My own commit style.")
		doorWrite(t, doors, caller, "workspace/notes.md", "not a skill", nil)
		// Documents under skills/ that are not skills: no description (a store write), a nested
		// name, a name outside the grammar. Each is skipped.
		ws := memsdk.Scope{Binding: "workspace", Kind: memsdk.ScopeWorkspace, OwnerID: w.workspace, Access: memsdk.AccessReadWrite}
		for _, name := range []string{"skills/no-description", "skills/a/b", "skills/Upper"} {
			if _, err := s.Write(ctx, &memsdk.WriteRequest{Scope: ws, Name: name, Content: "x", WrittenAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}

		facts := memory.RunFacts{WorkspacePublicID: w.workspace, Principal: memory.Principal{Kind: memory.PrincipalAgent, PublicID: w.agent}}
		scopes, err := r.Resolve(ctx, nil, memory.DefaultContext(false, true), facts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.KernelSkillCatalog(ctx, scopes)
		if err != nil {
			t.Fatal(err)
		}
		want := []memory.SkillEntry{
			{Name: "commit-style", Description: "How this team writes commit messages.", Source: memory.SourceWorkspace},
			{Name: "deploy-notes", Description: "The workspace's copy.", Source: memory.SourceWorkspace},
			{Name: "review-checklist", Description: "Review:   how I check\n\n  a change.", Source: memory.SourceUser},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("catalog (-want +got):\n%s", diff)
		}
		// The entry has the frozen skill catalog's wire shape, the callable filled
		// by acceptance.
		got[0].Callable = "skill"
		raw, _ := json.Marshal(got[0])
		if string(raw) != `{"callable":"skill","name":"commit-style","description":"How this team writes commit messages.","source":"workspace"}` {
			t.Errorf("entry JSON %s", raw)
		}

		// Only the roots the run resolves contribute: without a user binding, no user skills;
		// with none at all, an empty catalog.
		only, err := s.KernelSkillCatalog(ctx, scopes[:1])
		if err != nil || len(only) != 2 || only[0].Source != memory.SourceWorkspace || only[1].Source != memory.SourceWorkspace {
			t.Fatalf("workspace-only catalog: %+v %v", only, err)
		}
		none, err := s.KernelSkillCatalog(ctx, nil)
		if err != nil || len(none) != 0 {
			t.Fatalf("no bindings: %+v %v", none, err)
		}
		// The user's own copy is still there and wins when the workspace's goes.
		userScope, _ := memory.SkillSourceScope(scopes, memory.SourceUser)
		if res, err := s.LoadSkill(ctx, userScope, "commit-style"); err != nil || res.Text != "# Mine\n" {
			t.Fatalf("user copy: %+v %v", res, err)
		}
	})
}

// TestLoadSkill pins the skill tool's in-process answers (docs/agent-tools.md#memory-and-skills).
func TestLoadSkill(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		w := newWorld(t, db)
		s := memory.New(db)
		r := memory.NewResolver(db, nil)
		doors := memory.NewDoors(s, r, memory.DoorsOptions{})
		caller := memory.Caller{WorkspacePublicID: w.workspace, Principal: memory.Principal{Kind: memory.PrincipalUser, PublicID: w.person}}
		doorWrite(t, doors, caller, "workspace/skills/release-notes", "# Release notes\nBe brief.\n", "How we write release notes.")
		var long strings.Builder
		for i := range 2001 {
			long.WriteString("line " + strings.Repeat("x", i%3) + "\n")
		}
		doorWrite(t, doors, caller, "user/skills/long", long.String(), "A long one.")
		scopes, err := r.Resolve(ctx, nil, memory.DefaultContext(false, true), memory.RunFacts{WorkspacePublicID: w.workspace, Principal: caller.Principal})
		if err != nil {
			t.Fatal(err)
		}
		wsScope, ok := memory.SkillSourceScope(scopes, memory.SourceWorkspace)
		if !ok {
			t.Fatal("no workspace source")
		}
		userScope, ok := memory.SkillSourceScope(scopes, memory.SourceUser)
		if !ok {
			t.Fatal("no user source")
		}
		footer := "\n[Showing 2000 of 2001 lines. Continue with offset=2001.]"
		cases := []struct {
			name   string
			source memsdk.Scope
			skill  string
			want   memsdk.Result
		}{
			{"found", wsScope, "release-notes", memsdk.Result{Text: "# Release notes\nBe brief.\n", Title: "read workspace/skills/release-notes"}},
			{"sliced like memory_read", userScope, "long", memsdk.Result{Text: memsdk.ReadSlice(long.String(), 1, 2000), Title: "read user/skills/long"}},
			{"never the other root", userScope, "release-notes", memsdk.Result{Text: "skill_unknown: release-notes", IsError: true, Title: "skill refused"}},
			{"missing", wsScope, "gone", memsdk.Result{Text: "skill_unknown: gone", IsError: true, Title: "skill refused"}},
			{"outside the grammar", wsScope, "Release_Notes", memsdk.Result{Text: "skill_unknown: Release_Notes", IsError: true, Title: "skill refused"}},
			{"nested", wsScope, "release-notes/x", memsdk.Result{Text: "skill_unknown: release-notes/x", IsError: true, Title: "skill refused"}},
			{"clipped to 120 characters", wsScope, strings.Repeat("é", 130), memsdk.Result{Text: "skill_unknown: " + strings.Repeat("é", 120), IsError: true, Title: "skill refused"}},
			{"empty", wsScope, "", memsdk.Result{Text: "skill_unknown", IsError: true, Title: "skill refused"}},
		}
		for _, c := range cases {
			got, err := s.LoadSkill(ctx, c.source, c.skill)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.name, diff)
			}
		}
		if got, _ := s.LoadSkill(ctx, userScope, "long"); !strings.HasSuffix(got.Text, footer) {
			t.Errorf("long skill ends %q", got.Text[len(got.Text)-80:])
		}
		if _, ok := memory.SkillSourceScope(scopes[:1], memory.SourceUser); ok {
			t.Error("a source the run no longer binds was found")
		}
		if got := memory.SkillNotServedDetail(memory.SourceUser, "long"); got != "memory root user no longer serves skill long" {
			t.Errorf("not-served detail %q", got)
		}
		if got := memory.SkillUnknownResult(""); got.Text != "skill_unknown" || !got.IsError || got.Title != "skill refused" {
			t.Errorf("skill_unknown alone: %+v", got)
		}
	})
}
