package httpapi

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/kernel"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// planeFixture is the whole API as the server wires it: identity, runs, the executor plane, push,
// uploads, memory and profiles, over one clock the test moves. Tests drive the kernel's queue by
// hand.
type planeFixture struct {
	*fixture
	engine *runs.Engine
	plane  *executors.Service
}

// testClaimsPerMinute and testClaimReadsPerMinute shrink the rate limits so that a test reaches
// them in a few requests.
const (
	testClaimsPerMinute     = 5
	testClaimReadsPerMinute = 3
)

func newPlaneFixture(t *testing.T, s *store.Store) *planeFixture {
	t.Helper()
	f := newFixture(t, s)
	clock := func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}
	reg := registry.New()
	comp, err := declare.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	models := model.MustBuiltin()
	tools := kernel.New(kernel.Options{
		Memory: &kernel.Memory{Provider: kmemory.New(s), Scopes: kernel.MemoryScopes{Resolver: kmemory.NewResolver(s, conversations.ConversationStates{})}, Now: clock},
		Models: &kernel.Models{Catalog: models},
	})
	e, err := runs.New(runs.Options{Store: s, Conversations: conversations.Hosted{}, Models: models, Registry: reg, Compiler: comp, Kernel: tools, Now: clock,
		Memory: kmemory.NewResolver(s, conversations.ConversationStates{}), Uploads: f.uploads, Signal: f.push, Announcements: executors.Addressing{}})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := executors.New(executors.Options{Store: s, Engine: e, Uploads: f.uploads,
		ClaimsPerMinute: testClaimsPerMinute, ClaimReadsPerMinute: testClaimReadsPerMinute})
	if err != nil {
		t.Fatal(err)
	}
	f.effects.then = executors.NewRevocation(f.push, e, nil)
	doors := kmemory.NewDoors(kmemory.New(s), kmemory.NewResolver(s, nil), kmemory.DoorsOptions{Now: clock})
	api, err := New(Deps{Auth: f.auth, Directory: f.dir, CatalogBody: reg.CatalogBody(), Now: clock, Runs: e, Models: models,
		Profiles: f.profiles, Memory: doors, Uploads: f.uploads, Push: f.push, Executors: pl})
	if err != nil {
		t.Fatal(err)
	}
	f.api = api
	return &planeFixture{fixture: f, engine: e, plane: pl}
}

// executorPlaneRoutes are the work doors of the executor plane: the test fails when one is added
// or dropped without this list, so that the seal below covers it.
var executorPlaneRoutes = []string{
	"GET /agent_api/v1/executor/announcement",
	"GET /agent_api/v1/executor/inbox",
	"GET /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/claim",
	"POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/claim",
	"POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/commit",
	"POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/extend",
	"PUT /agent_api/v1/executor/announcement",
}

// TestPlaneSealWholeServer: with every service wired, a member token (user or agent) on every
// executor-plane route and an executor token on every member-plane route answer 401
// unauthorized, whatever the rest of the request; and the executor plane serves exactly its
// listed work doors.
func TestPlaneSealWholeServer(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newPlaneFixture(t, s)
		var work []string
		for _, p := range f.api.patterns {
			if strings.Contains(p, "/agent_api/v1/executor/") && !strings.Contains(p, "/uploads") && !strings.HasSuffix(p, "/events") {
				work = append(work, p)
			}
		}
		sort.Strings(work)
		if strings.Join(work, "\n") != strings.Join(executorPlaneRoutes, "\n") {
			t.Fatalf("executor work routes:\n%s", strings.Join(work, "\n"))
		}
		exID, exTok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		unknownMember, _ := identity.MintToken(identity.MemberPlane)
		unknownExec, _ := identity.MintToken(identity.ExecutorPlane)
		body := `{"tools":[],"claim_token":"nxc_x","timeout_ms":1000,"run":{"steps":[]}}`
		checked := 0
		for _, pattern := range f.api.patterns {
			method, path, _ := strings.Cut(pattern, " ")
			path = strings.NewReplacer("{ws}", "default", "{public_id}", exID, "{run_public_id}", exID, "{task_key}", "r2t0",
				"{run}", exID, "{key}", "r2t0", "{conversation}", exID).Replace(path)
			var wrong []string
			switch planeOf(path) {
			case planeExecutor:
				wrong = []string{f.admin, f.agent, unknownExec, ""}
			case planeMember:
				wrong = []string{exTok, unknownMember, ""}
			default:
				continue
			}
			for _, tok := range wrong {
				resp := f.do(t, method, path, tok, strings.NewReader(body), nil)
				wantError(t, resp, 401, "unauthorized")
			}
			checked++
		}
		if checked < 40 {
			t.Fatalf("only %d routes checked", checked)
		}
		if obj(t, f.must(t, 200, "GET", "/agent_api/v1/executor/announcement", exTok, nil), "announcement")["announced_at"] != nil {
			t.Fatal("a sealed request announced")
		}
	})
}

// TestClaimRateLimits: claims and claim reads over their per-minute bounds answer 429
// rate_limited with an integer Retry-After, per executor, and the bucket refills with time.
func TestClaimRateLimits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newPlaneFixture(t, s)
		_, tok := f.newExecutor(t, f.admin, "default", "runner", "a")
		_, other := f.newExecutor(t, f.admin, "default", "runner", "b")
		claim := "/agent_api/v1/executor/inbox/01900000-0000-7000-8000-000000000001/r2t0/claim"
		for i := 0; i < testClaimsPerMinute; i++ {
			f.refused(t, 404, "not_found", "", "POST", claim, tok, nil)
		}
		resp := f.do(t, "POST", claim, tok, nil, nil)
		wantError(t, resp, 429, "rate_limited")
		ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 60 {
			t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
		f.refused(t, 404, "not_found", "", "POST", claim, other, nil) // another executor's bucket
		hdr := map[string]string{"Claim-Token": "nxc_x"}
		for i := 0; i < testClaimReadsPerMinute; i++ {
			wantError(t, f.do(t, "GET", claim, tok, nil, hdr), 404, "not_found")
		}
		resp = f.do(t, "GET", claim, tok, nil, hdr)
		wantError(t, resp, 429, "rate_limited")
		if resp.Header.Get("Retry-After") == "" {
			t.Fatal("claim read refused without Retry-After")
		}
		f.advance(time.Minute)
		f.refused(t, 404, "not_found", "", "POST", claim, tok, nil)
	})
}

// TestInboxPages: the inbox pages in dispatch order with an opaque cursor; a malformed or
// foreign cursor and an out-of-range limit are 400 parameter_invalid.
func TestInboxPages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newPlaneFixture(t, s)
		rid, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		f.must(t, 200, "PUT", "/agent_api/v1/executor/announcement", tok, `{"tools":[{"name":"shot","effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"open","idempotency":"intrinsic","reconciliation":"none"}}]}`)
		var runsMade []string
		for i := 0; i < 5; i++ {
			m := f.must(t, 201, "POST", "/agent_api/v1/workspaces/default/runs", f.admin,
				`{"run":{"approval_mode":"bypass","steps":[{"tool":{"name":"shot","route":{"kind":"runner","runner_executor_public_id":"`+rid+`"}}}]}}`)
			runsMade = append(runsMade, obj(t, m, "run")["public_id"].(string))
			f.advance(time.Millisecond)
		}
		var seen []string
		after := ""
		for pages := 0; ; pages++ {
			url := "/agent_api/v1/executor/inbox?limit=2"
			if after != "" {
				url += "&after=" + after
			}
			m := f.must(t, 200, "GET", url, tok, nil)
			for _, row := range list(t, m, "tasks") {
				seen = append(seen, row["run_public_id"].(string))
				if row["kind"] != "tool_call" || row["status"] != "dispatched" || row["claimed"] != false {
					t.Fatalf("row %v", row)
				}
			}
			next, _ := obj(t, m, "pagination")["next_after"].(string)
			if next == "" {
				if pages != 2 {
					t.Fatalf("%d pages", pages+1)
				}
				break
			}
			after = next
		}
		if strings.Join(seen, ",") != strings.Join(runsMade, ",") {
			t.Fatalf("order %v, want %v", seen, runsMade)
		}
		for _, bad := range []string{"after=nope", "after=cnVuOjE", "limit=0", "limit=201", "limit=x"} {
			f.refused(t, 400, "parameter_invalid", "", "GET", "/agent_api/v1/executor/inbox?"+bad, tok, nil)
		}
		// Another runner of the workspace sees none of it.
		_, otherTok := f.newExecutor(t, f.admin, "default", "runner", "other")
		if rows := list(t, f.must(t, 200, "GET", "/agent_api/v1/executor/inbox", otherTok, nil), "tasks"); len(rows) != 0 {
			t.Fatalf("another runner's inbox %v", rows)
		}
	})
}

// TestNotClaimableKind: claim check 3 keeps its place for kinds this version never addresses to
// an executor. A row of another kind forged with an addressee is refused not_claimable_kind,
// after not_found and not_addressed_here and before any status check.
func TestNotClaimableKind(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newPlaneFixture(t, s)
		rid, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		m := f.must(t, 201, "POST", "/agent_api/v1/workspaces/default/runs", f.admin,
			`{"run":{"approval_mode":"bypass","start":false,"steps":[{"model":{"model":"mock/scripted","prompt":"hi"}}]}}`)
		run := obj(t, m, "run")["public_id"].(string)
		err := s.Write(context.Background(), func(tx *store.Tx) error {
			_, err := tx.Exec(context.Background(), `UPDATE tasks SET kind = 'await_task', addressed_role = 'runner', addressed_executor_public_id = ?, status = 'dispatched'
WHERE run_id = (SELECT id FROM runs WHERE public_id = ?)`, rid, run)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		f.refused(t, 409, "not_claimable_kind", "", "POST", "/agent_api/v1/executor/inbox/"+run+"/s1-model-1/claim", tok, nil)
		_, other := f.newExecutor(t, f.admin, "default", "runner", "other")
		f.refused(t, 409, "not_addressed_here", "", "POST", "/agent_api/v1/executor/inbox/"+run+"/s1-model-1/claim", other, nil)
	})
}

// TestExecutorPlaneWords pins every word of docs/api.md#the-executor-plane this package answers to
// its constant: renaming one breaks this test as well as the scenarios that answer it.
func TestExecutorPlaneWords(t *testing.T) {
	t.Parallel()
	got := []string{executors.CodeNotAddressedHere, executors.CodeNotClaimableKind, executors.CodeTaskNotClaimable,
		executors.CodeAlreadyClaimed, executors.CodeNotEligible, executors.CodeNotAuthorized, executors.CodeNotClaimant,
		executors.CodeNotExtendable, executors.CodeExtensionTooLong, executors.CodeTaskNotRunning, executors.CodeStaleClaim,
		executors.CodeInvalidTimeoutMS, executors.CodeResultUnstorable, executors.CodeRateLimited, executors.CodeReservedNamespace,
		executors.CodeInvalidAnnouncement, executors.CodeValidationFailed}
	want := []string{"not_addressed_here", "not_claimable_kind", "task_not_claimable", "already_claimed", "not_eligible",
		"not_authorized", "not_claimant", "not_extendable", "extension_too_long", "task_not_running", "stale_claim",
		"invalid_timeout_ms", "result_unstorable", "rate_limited", "reserved_namespace", "invalid_announcement", "validation_failed"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("words %v", got)
	}
}
