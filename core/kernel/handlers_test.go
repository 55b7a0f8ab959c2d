package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/kernel"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/memory"
)

func roundOf(r *runs.CallingRound) func(context.Context) (*runs.CallingRound, error) {
	return func(context.Context) (*runs.CallingRound, error) { return r, nil }
}

// TestRunnersList pins docs/agent-tools.md#the-twenty-kernel-tools: the frozen selection and the
// eligible candidates in declared order with their frozen environments ({} when none), keys in
// order; null when nothing is selected; any key refused.
func TestRunnersList(t *testing.T) {
	t.Parallel()
	env := `{"default_runner_executor_public_id":null,"executors":[{"runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000cc","display_name":"CI","environment":{"os":"linux"}}],` +
		`"runner_candidates":[{"runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000bb","display_name":"Mac","environment":{"os":"darwin","arch":"arm64","tools":["xcode"]}},` +
		`{"runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000aa","display_name":"Workstation","environment":{}}]}`
	selected := strings.Replace(env, `"default_runner_executor_public_id":null`, `"default_runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000aa"`, 1)
	cases := []struct{ env, in, text, title string }{
		{env, `{}`, `{"current_runner_executor_public_id":null,"runners":[{"runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000bb","display_name":"Mac","environment":{"os":"darwin","arch":"arm64","tools":["xcode"]}},` +
			`{"runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000aa","display_name":"Workstation","environment":{}}]}`, "runner environments"},
		{selected, `null`, `{"current_runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000aa","runners":[{"runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000bb","display_name":"Mac","environment":{"os":"darwin","arch":"arm64","tools":["xcode"]}},` +
			`{"runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000aa","display_name":"Workstation","environment":{}}]}`, "runner environments"},
		{`null`, `{}`, `{"current_runner_executor_public_id":null,"runners":[]}`, "runner environments"},
		{`{"default_runner_executor_public_id":null,"executors":[],"runner_candidates":[]}`, `{}`, `{"current_runner_executor_public_id":null,"runners":[]}`, "runner environments"},
		{env, `{"verbose":true,"all":1}`, "invalid_arguments: all is not a parameter; this tool takes no parameters.", "runners_list refused"},
	}
	for _, c := range cases {
		out, err := kernel.Runners{}.Run(context.Background(), &runs.KernelCall{ToolName: "runners_list", Input: json.RawMessage(c.in),
			Round: roundOf(&runs.CallingRound{Key: "r1", Environment: []byte(c.env)})})
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		r := out.Result
		if r.Content != c.text || r.Title != c.title || r.IsError != strings.HasPrefix(c.text, "invalid_arguments") {
			t.Errorf("%s:\n got %+v\nwant %s", c.in, r, c.text)
		}
		if !r.IsError && string(r.StructuredContent) != r.Content {
			t.Errorf("structured_content %s", r.StructuredContent)
		}
	}
}

type scopes []memory.Scope

func (s scopes) Scopes(context.Context, *runs.KernelCall) ([]memory.Scope, error) { return s, nil }

// TestSkillLoad pins the in-process answers (docs/agent-tools.md#memory-and-skills): the body
// sliced as memory_read with the read title; skill_unknown (clipped to 120 characters, the word
// alone without a string name) for a name outside the callable's frozen catalog or whose document
// is gone; tool_not_served when the frozen root no longer resolves. The frozen source is read,
// never the other root; an alias reads its own catalog entries.
func TestSkillLoad(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		st := kmemory.New(db)
		ws, person := store.NewPublicID(), store.NewPublicID()
		workspace := memory.Scope{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: ws, Access: memory.AccessReadWrite, WorkspaceID: ws}
		user := memory.Scope{Binding: "user", Kind: memory.ScopeUser, OwnerID: person, Access: memory.AccessReadWrite, WorkspaceID: ws}
		var long strings.Builder
		for i := 1; i <= 2001; i++ {
			fmt.Fprintf(&long, "line %d\n", i)
		}
		for _, w := range []struct {
			scope      memory.Scope
			name, body string
		}{
			{workspace, "skills/release-notes", long.String()},
			{user, "skills/release-notes", "the user's copy, never read"},
			{user, "skills/mine", "# Mine\n"},
			{workspace, "skills/short", "# Short\nUse it.\n"},
		} {
			if _, err := st.Write(ctx, &memory.WriteRequest{Scope: w.scope, Name: w.name, Content: w.body, WrittenAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		catalog := `[{"callable":"Skill","name":"short","description":"Short.","source":"workspace"},` +
			`{"callable":"mac_skill","name":"signing","description":"Signing.","source":"runner","runner_executor_public_id":"0190a5e2-0000-7000-8000-0000000000bb"},` +
			`{"callable":"skill","name":"gone","description":"Deleted since.","source":"workspace"},` +
			`{"callable":"skill","name":"mine","description":"Mine.","source":"user"},` +
			`{"callable":"skill","name":"release-notes","description":"Notes.","source":"workspace"}]`
		long120 := strings.Repeat("n", 130)
		cases := []struct {
			bound             scopes
			alias, in         string
			text, title, fail string
			isErr             bool
		}{
			{scopes{workspace, user}, "", `{"name":"release-notes"}`, memory.ReadSlice(long.String(), 1, memory.MaxReadLines), "read workspace/skills/release-notes", "", false},
			{scopes{workspace, user}, "", `{"name":"mine"}`, "# Mine\n", "read user/skills/mine", "", false},
			{scopes{workspace, user}, "Skill", `{"name":"short","extra":1}`, "# Short\nUse it.\n", "read workspace/skills/short", "", false},
			{scopes{workspace, user}, "Skill", `{"name":"release-notes"}`, "skill_unknown: release-notes", "skill refused", "", true},
			{scopes{workspace, user}, "", `{"name":"short"}`, "skill_unknown: short", "skill refused", "", true},
			{scopes{workspace, user}, "", `{"name":"gone"}`, "skill_unknown: gone", "skill refused", "", true},
			{scopes{workspace, user}, "", `{"name":"` + long120 + `"}`, "skill_unknown: " + long120[:120], "skill refused", "", true},
			{scopes{workspace, user}, "", `{"name":"Release-Notes"}`, "skill_unknown: Release-Notes", "skill refused", "", true},
			{scopes{workspace, user}, "", `{}`, "skill_unknown", "skill refused", "", true},
			{scopes{workspace, user}, "", `{"name":7}`, "skill_unknown", "skill refused", "", true},
			{scopes{workspace}, "", `{"name":"mine"}`, "", "", "memory root user no longer serves skill mine", false},
			{scopes{workspace, user}, "mac_skill", `{"name":"signing"}`, "", "", "runner 0190a5e2-0000-7000-8000-0000000000bb does not serve skill signing here", false},
		}
		for _, c := range cases {
			sk := &kernel.Skill{Store: st, Scopes: c.bound}
			out, err := sk.Run(ctx, &runs.KernelCall{ToolName: "skill", ToolAlias: c.alias, Input: json.RawMessage(c.in),
				Round: roundOf(&runs.CallingRound{Key: "r1", SkillCatalog: []byte(catalog)})})
			if err != nil {
				t.Fatalf("%s: %v", c.in, err)
			}
			if c.fail != "" {
				if out.Failure == nil || out.Failure.Key != "tool_not_served" || out.Failure.Detail != c.fail {
					t.Errorf("%s: %+v, want tool_not_served %q", c.in, out, c.fail)
				}
				continue
			}
			r := out.Result
			if r == nil || r.Content != c.text || r.Title != c.title || r.IsError != c.isErr || r.StructuredContent != nil {
				t.Errorf("%s %s: %+v", c.alias, c.in, out)
			}
		}
		// The slicing is memory_read's: 2,000 lines, then the footer.
		if got := memory.ReadSlice(long.String(), 1, memory.MaxReadLines); !strings.HasSuffix(got, "line 2000\n\n[Showing 2000 of 2001 lines. Continue with offset=2001.]") {
			t.Fatalf("slice tail %q", got[len(got)-80:])
		}
	})
}
