package profiles_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/profiles/profilestest"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// buildBox is the Runner (docs/api.md#agent-profiles): read, grep and memory_read with descriptions
// and schemas, deploy with neither.
const buildBox = `{"tools":[
 {"name":"read","effect_profile":` + profilestest.ReadOnly + `,"description":"Read a file from the runner's workspace.","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
 {"name":"grep","effect_profile":` + profilestest.ReadOnly + `,"description":"Search files on the runner.","input_schema":{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}},
 {"name":"memory_read","effect_profile":` + profilestest.ReadOnly + `,"description":"Read memory on the runner.","input_schema":{"type":"object"}},
 {"name":"deploy","effect_profile":` + profilestest.ReadOnly + `}],
 "environment":{"os":"linux","arch":"amd64","workdir":"/srv/app"}}`

func TestRunnersEligibility(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		ctx := context.Background()
		box := profilestest.Executor(t, s, e.agent.WorkspaceID, store.ExecutorRunner, runner51, "build-box")
		profilestest.Announce(t, s, box, buildBox)
		revoked := profilestest.Executor(t, s, e.agent.WorkspaceID, store.ExecutorRunner, runner52, "old-box")
		profilestest.Revoke(t, s, revoked)
		profilestest.Executor(t, s, e.agent.WorkspaceID, store.ExecutorToolProvider, runner53, "pool")
		profilestest.Executor(t, s, e.otherWS, store.ExecutorRunner, "01900000-0000-7000-8000-000000000054", "foreign")

		got, err := profiles.Runners(ctx, s.Reader(), e.agent.WorkspaceID, []string{
			"01900000-0000-7000-8000-000000000054", // another workspace's Runner: nothing
			strings.ToUpper(runner53),              // a tool provider: known, not eligible
			runner52,                               // revoked: known, not eligible
			"not-a-uuid",                           // skipped
			"01900000-0000-7000-8000-000000000099", // unknown: nothing
			runner51, strings.ToUpper(runner51),    // repeats, case-insensitively
		})
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			ID, Name string
			Eligible bool
			Tools    int
			Env      string
		}
		var rows []row
		for _, r := range got {
			rows = append(rows, row{r.PublicID, r.DisplayName, r.Eligible, len(r.Announcement.Tools), string(r.Announcement.Environment)})
		}
		want := []row{
			{runner53, "pool", false, 0, ""},
			{runner52, "old-box", false, 0, ""},
			{runner51, "build-box", true, 4, `{"os":"linux","arch":"amd64","workdir":"/srv/app"}`},
		}
		if d := cmp.Diff(want, rows); d != "" {
			t.Fatalf("runners (-want +got):\n%s", d)
		}
		// The announcement reads back as the door stored it.
		a, err := profiles.AnnouncementOf(ctx, s.Reader(), box)
		if err != nil {
			t.Fatal(err)
		}
		parsed, _ := announce.ParseAnnouncement([]byte(buildBox))
		if d := cmp.Diff(parsed.Normalize(), a.Announcement); d != "" || a.AnnouncedAt == 0 {
			t.Fatalf("announcement (-parsed +stored) at %d:\n%s", a.AnnouncedAt, d)
		}
		if got[2].Announcement.Tools[3].Description != nil || got[2].Announcement.Tools[0].ModelFacing() != true {
			t.Fatal("optional tool fields did not survive the store")
		}
	})
}

// TestRunnersManyIDs: a candidate list longer than one lookup batch is read whole.
func TestRunnersManyIDs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		last := "01900000-0000-7000-8000-0000000fffff"
		profilestest.Executor(t, s, e.agent.WorkspaceID, store.ExecutorRunner, last, "last")
		ids := make([]string, 0, 1201)
		for i := range 1200 {
			ids = append(ids, "01900000-0000-7000-8000-"+strings.Repeat("0", 8)+hex4(i))
		}
		ids = append(ids, last)
		got, err := profiles.Runners(context.Background(), s.Reader(), e.agent.WorkspaceID, ids)
		if err != nil || len(got) != 1 || got[0].PublicID != last {
			t.Fatalf("runners = %+v, %v", got, err)
		}
	})
}

func hex4(i int) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[i>>12&15], digits[i>>8&15], digits[i>>4&15], digits[i&15]})
}

func TestPutAnnouncementValidates(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		ctx := context.Background()
		box := profilestest.Executor(t, s, e.agent.WorkspaceID, store.ExecutorRunner, runner51, "build-box")
		profilestest.Announce(t, s, box, buildBox)
		before, _ := profiles.AnnouncementOf(ctx, s.Reader(), box)
		bad := announce.Announcement{Tools: []announce.Tool{{Name: "delegate_task", EffectProfile: announce.Announced(announce.EffectReadOnly)}}}
		err := s.Write(ctx, func(tx *store.Tx) error {
			return profiles.PutAnnouncement(ctx, tx, box, bad, time.Now())
		})
		if r, ok := refusal.As(err); !ok || r.Code != announce.CodeReservedNamespace {
			t.Fatalf("err = %v, want reserved_namespace", err)
		}
		after, _ := profiles.AnnouncementOf(ctx, s.Reader(), box)
		if d := cmp.Diff(before, after); d != "" {
			t.Fatalf("a refused announcement changed the stored one:\n%s", d)
		}
		if _, err := profiles.AnnouncementOf(ctx, s.Reader(), box+1000); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("never announced: %v", err)
		}
	})
}

// TestAccept freezes stored profiles with Runners read from the store: the example
// (docs/api.md#agent-profiles), the selection and route refusals, narrowing, and a snapshot that
// later changes do not reach.
func TestAccept(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		ctx := context.Background()
		box := profilestest.Executor(t, s, e.agent.WorkspaceID, store.ExecutorRunner, runner51, "build-box")
		profilestest.Announce(t, s, box, buildBox)
		e.mustPut(t, `{"tool_definitions":[
		  {"type":"function","name":"grep","description":"Search files.","parameters":{"type":"object"}},
		  {"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task"}],
		 "kernel_tools":["nexus.graph.wait"],"runner_executor_public_ids":["`+runner51+`"],"runner_tool_names":null,
		 "approval_mode":"ask"}`)

		// Current and Accept inside one transaction, as a conversation's acceptance runs them.
		var frozen *declare.Frozen
		var p *profiles.Profile
		err := s.Write(ctx, func(tx *store.Tx) error {
			var err error
			if p, err = e.svc.Current(ctx, tx, e.agent.ID); err != nil {
				return err
			}
			frozen, err = e.svc.Accept(ctx, tx, p, profiles.Acceptance{Selection: strings.ToUpper(runner51)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"Agent", "grep", "grep__562fcae5dc94", "read", "wait"}, frozen.ToolDefinitions.Callables()); d != "" {
			t.Fatalf("callables (-want +got):\n%s", d)
		}
		env, _ := frozen.Environment.MarshalJSON()
		row := `{"runner_executor_public_id":"` + runner51 + `","display_name":"build-box","environment":{"os":"linux","arch":"amd64","workdir":"/srv/app"}}`
		if want := `{"default_runner_executor_public_id":"` + runner51 + `","executors":[` + row + `],"runner_candidates":[` + row + `]}`; string(env) != want {
			t.Fatalf("environment:\n got %s\nwant %s", env, want)
		}
		wait, _ := frozen.ToolDefinitions.Lookup("wait")
		if desc, _ := wait.Value.Get("function"); !strings.Contains(string(desc.Encode()), "started with Agent") {
			t.Fatalf("wait does not say Agent: %s", desc.Encode())
		}

		// Narrowing.
		f, err := e.svc.Accept(ctx, s.Reader(), p, profiles.Acceptance{Selection: runner51, ToolNames: []string{"read", "Agent"}})
		if err != nil || strings.Join(f.ToolDefinitions.Callables(), ",") != "Agent,read" {
			t.Fatalf("narrowed: %v %v", f, err)
		}
		_, err = e.svc.Accept(ctx, s.Reader(), p, profiles.Acceptance{ToolNames: []string{"read"}})
		if r := refusalOf(t, err); r.Word != "tool_not_declared" || r.ToolName != "read" {
			t.Fatalf("narrowing without a selection: %s %s", r.Word, r.ToolName)
		}
		// A selection outside the candidates, and a revoked selection.
		other := profilestest.Executor(t, s, e.agent.WorkspaceID, store.ExecutorRunner, runner52, "other-box")
		_, err = e.svc.Accept(ctx, s.Reader(), p, profiles.Acceptance{Selection: runner52})
		if r := refusalOf(t, err); r.Word != "runner_not_declared" || r.RunnerID != runner52 {
			t.Fatalf("selection outside the candidates: %s", r.Word)
		}
		profilestest.Revoke(t, s, box)
		_, err = e.svc.Accept(ctx, s.Reader(), p, profiles.Acceptance{Selection: runner51})
		if r := refusalOf(t, err); r.Word != "runner_not_eligible" {
			t.Fatalf("revoked selection: %s", r.Word)
		}
		// The first freeze is a snapshot: the revocation and a new announcement change nothing in it.
		profilestest.Announce(t, s, other, `{"tools":[]}`)
		if d := cmp.Diff([]string{"Agent", "grep", "grep__562fcae5dc94", "read", "wait"}, frozen.ToolDefinitions.Callables()); d != "" {
			t.Fatal(d)
		}
	})
}

// TestAcceptRoutes: a routed entry's Runner must be eligible and announce the served name;
// route checks see only the narrowed set; the frozen skill catalog reads the Runner's documents.
func TestAcceptRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		ctx := context.Background()
		e.mustPut(t, `{"tool_definitions":[
		  {"type":"function","function":{"name":"remote_read","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"`+strings.ToUpper(runner51)+`","tool_name":"read"}},
		  {"type":"function","function":{"name":"mac_skill","description":"Load a skill.","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"`+runner51+`","tool_name":"skill"}},
		  {"type":"function","name":"local","parameters":{"type":"object"}}],"approval_mode":"bypass"}`)
		p, err := e.svc.Current(ctx, s.Reader(), e.agent.ID)
		if err != nil {
			t.Fatal(err)
		}
		accept := func(names []string) (*declare.Frozen, error) {
			return e.svc.Accept(ctx, s.Reader(), p, profiles.Acceptance{ToolNames: names})
		}
		// The Runner does not exist yet: not eligible, naming the first routed callable.
		_, err = accept(nil)
		if r := refusalOf(t, err); r.Word != "runner_not_eligible" || r.Callable != "mac_skill" {
			t.Fatalf("unknown Runner: %s %s", r.Word, r.Callable)
		}
		if _, err := accept([]string{"local"}); err != nil {
			t.Fatalf("a turn that narrows the routes away: %v", err)
		}
		box := profilestest.Executor(t, s, e.agent.WorkspaceID, store.ExecutorRunner, runner51, "mac")
		profilestest.Announce(t, s, box, `{"tools":[{"name":"skill","effect_profile":`+profilestest.ReadOnly+`}],
		  "documents":[{"name":"deploy-notes","description":"How this project is deployed."}]}`)
		_, err = accept(nil)
		if r := refusalOf(t, err); r.Word != "tool_not_served" || r.Callable != "remote_read" || r.ToolName != "read" {
			t.Fatalf("not served: %s %s %s", r.Word, r.Callable, r.ToolName)
		}
		f, err := accept([]string{"mac_skill"})
		if err != nil {
			t.Fatal(err)
		}
		cat, _ := f.SkillCatalog.MarshalJSON()
		if want := `[{"callable":"mac_skill","name":"deploy-notes","description":"How this project is deployed.","source":"runner","runner_executor_public_id":"` + runner51 + `"}]`; string(cat) != want {
			t.Fatalf("skill catalog %s", cat)
		}
		// Runners are read in the profile's own workspace only.
		pOther := *p
		pOther.WorkspaceID = e.otherWS
		_, err = e.svc.Accept(ctx, s.Reader(), &pOther, profiles.Acceptance{ToolNames: []string{"mac_skill"}})
		if r := refusalOf(t, err); r.Word != "runner_not_eligible" {
			t.Fatalf("a Runner of another workspace: %s", r.Word)
		}
	})
}
