package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// toolStep is a member tool step routed to r.
func toolStep(name, runner string, extra map[string]any) map[string]any {
	s := map[string]any{"name": name, "input": map[string]any{}, "route": map[string]any{"kind": "runner", "runner_executor_public_id": runner}}
	for k, v := range extra {
		s[k] = v
	}
	return map[string]any{"tool": s}
}

func (p *plane) toolRun(c *client.Client, steps []any, idem string) (*client.RunCreated, error) {
	return c.CreateRun(p.ctx, "default", map[string]any{"steps": steps, "approval_mode": "bypass"}, idem)
}

// TestClaimPreconditions is scenario 13 with the rest of the claim, claim read, extend and
// commit words: each precondition in its order.
func TestClaimPreconditions(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			other := p.executor("runner", "other")
			p.announce(r, tool("screenshot", 120000))
			run := p.modelRun("mock/scripted", oneCall, []any{routed("screenshot", r.id)}, nil, "ask", nil)
			p.waitTask(run, "r2t0", "needs_approval")
			_, err := r.c.ClaimWork(p.ctx, run, "r2t0")
			wantCode(t, err, 409, "task_not_claimable")
			_, err = r.c.Commit(p.ctx, run, "r2t0", "nxc_x", &client.Result{Content: "early"})
			wantCode(t, err, 409, "task_not_running")
			_, err = other.c.ClaimWork(p.ctx, run, "r2t0")
			wantCode(t, err, 409, "not_addressed_here")
			_, err = r.c.ClaimWork(p.ctx, "01900000-0000-7000-8000-00000000dead", "r2t0")
			if ce := wantCode(t, err, 404, "not_found"); ce.Message != "No run 01900000-0000-7000-8000-00000000dead in this executor's workspace." {
				t.Fatalf("unknown run: %q", ce.Message)
			}
			_, err = r.c.ClaimWork(p.ctx, run, "r9t9")
			if ce := wantCode(t, err, 404, "not_found"); ce.Message != "No task r9t9 in this run." {
				t.Fatalf("unknown key: %q", ce.Message)
			}
			_, err = r.c.Commit(p.ctx, "01900000-0000-7000-8000-00000000dead", "r2t0", "nxc_x", &client.Result{Content: "x"})
			if ce := wantCode(t, err, 404, "not_found"); ce.Message != "No run 01900000-0000-7000-8000-00000000dead in this executor's workspace." {
				t.Fatalf("commit, unknown run: %q", ce.Message)
			}
			_, err = r.c.Commit(p.ctx, run, "r9t9", "nxc_x", &client.Result{Content: "x"})
			if ce := wantCode(t, err, 404, "not_found"); ce.Message != "No task r9t9 in this run." {
				t.Fatalf("commit, unknown key: %q", ce.Message)
			}
			if _, err := p.admin.Approve(p.ctx, "default", run, "r2t0"); err != nil {
				t.Fatal(err)
			}
			cl := p.claim(r, run, "r2t0")
			tok := cl.Claim.ClaimToken
			_, err = r.c.ClaimWork(p.ctx, run, "r2t0")
			wantCode(t, err, 409, "already_claimed")
			_, err = r.c.ClaimStatus(p.ctx, run, "r2t0", "nxc_someone_else")
			wantCode(t, err, 409, "not_claimant")
			_, err = r.c.ClaimStatus(p.ctx, run, "r2t0", "")
			wantCode(t, err, 400, "parameter_missing")
			st, err := r.c.ClaimStatus(p.ctx, run, "r2t0", tok)
			if err != nil || !st.Claim.Active || st.Claim.Generation != 1 {
				t.Fatalf("claim read %v %v", st, err)
			}
			extend := func(body string) error {
				status, _, b := p.raw("POST", "/agent_api/v1/executor/inbox/"+run+"/r2t0/extend", r.token, []byte(body), nil)
				if status == 200 {
					return nil
				}
				return &client.Error{Status: status, Code: errorCode(b)}
			}
			wantCode(t, extend(`{"timeout_ms":1000}`), 400, "parameter_missing")
			wantCode(t, extend(`{"claim_token":"`+tok+`"}`), 400, "parameter_missing")
			wantCode(t, extend(`[1]`), 400, "parameter_invalid")
			for _, bad := range []string{"0", "-5", "1.5", `"60000"`, "null", "1e3"} {
				wantCode(t, extend(`{"claim_token":"`+tok+`","timeout_ms":`+bad+`}`), 422, "invalid_timeout_ms")
			}
			wantCode(t, extend(`{"claim_token":"nxc_wrong","timeout_ms":1000}`), 409, "not_claimant")
			wantCode(t, extend(`{"claim_token":"`+tok+`","timeout_ms":3600001}`), 409, "extension_too_long")
			wantCode(t, extend(`{"claim_token":"`+tok+`","timeout_ms":120001}`), 409, "extension_too_long") // over the announced timeout
			wantCode(t, extend(`{"claim_token":"`+tok+`","timeout_ms":99999999999999999999999}`), 409, "extension_too_long")
			before := time.Now()
			ext, err := r.c.ExtendClaim(p.ctx, run, "r2t0", tok, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if d := ext.Claim.DeadlineAt.Sub(before); d < 59*time.Second || d > 65*time.Second || ext.Claim.ClaimToken != tok || ext.Task.TimeoutMS != 120000 {
				t.Fatalf("extend %s", ext.Raw)
			}
			if tk := p.task(run, "r2t0"); tk.Task.DeadlineAt == nil || *tk.Task.DeadlineAt != ext.Claim.DeadlineAt.UTC().Format("2006-01-02T15:04:05.000Z") {
				t.Fatalf("task deadline %s", tk.Raw)
			}
			_, err = r.c.Commit(p.ctx, run, "r2t0", "nxc_made_up", &client.Result{Content: "x"})
			wantCode(t, err, 409, "stale_claim")
			// The body's refusals come after the row's own (docs/api.md#conventions): a malformed
			// body on a key that names nothing, or on a row another executor claimed, is 404; a
			// result the envelope refuses under a stale token is stale_claim.
			post := func(e *executor, key, door, body string) (int, string) {
				status, _, b := p.raw("POST", "/agent_api/v1/executor/inbox/"+run+"/"+key+"/"+door, e.token, []byte(body), nil)
				return status, errorCode(b)
			}
			for _, door := range []string{"extend", "commit"} {
				for _, c := range []struct {
					e          *executor
					key, body  string
					status     int
					code, what string
				}{
					{r, "r9t9", `[1]`, 404, "not_found", "an unknown key"},
					{r, "r9t9", `{"claim_token":5,"nope":1}`, 404, "not_found", "an unknown key"},
					{other, "r2t0", `[1]`, 404, "not_found", "another's claim"},
					{r, "r2t0", `{"claim_token":"` + tok + `","timeout_ms":1000,"content":"x","nope":1}`, 400, "parameter_invalid", "its own row"},
				} {
					if status, code := post(c.e, c.key, door, c.body); status != c.status || code != c.code {
						t.Errorf("%s, %s, %s: %d %s, want %d %s", door, c.what, c.body, status, code, c.status, c.code)
					}
				}
			}
			if status, code := post(r, "r2t0", "commit", `{"claim_token":"nxc_made_up","outcome":"maybe","content":[{"type":"image"}]}`); status != 409 || code != "stale_claim" {
				t.Errorf("an invalid result under a stale token: %d %s", status, code)
			}
			status, _, b := p.raw("POST", "/agent_api/v1/executor/inbox/"+run+"/r2t0/commit", r.token, []byte(`{"content":"x"}`), nil)
			if status != 400 || errorCode(b) != "parameter_missing" {
				t.Fatalf("commit without a token: %d %s", status, b)
			}
			status, _, b = p.raw("POST", "/agent_api/v1/executor/inbox/"+run+"/r2t0/commit", r.token, []byte(`"x"`), nil)
			if status != 400 || errorCode(b) != "parameter_invalid" {
				t.Fatalf("commit with a string body: %d %s", status, b)
			}
			huge := make([]byte, 2<<20+1)
			status, _, b = p.raw("POST", "/agent_api/v1/executor/inbox/"+run+"/r2t0/commit", r.token, huge, nil)
			if status != 413 || errorCode(b) != "content_too_large" {
				t.Fatalf("commit over 2 MiB: %d %s", status, b)
			}
			if res := p.commit(r, run, "r2t0", tok, &client.Result{Content: "done"}); !res.Applied {
				t.Fatal(res.Raw)
			}
			_, err = r.c.ExtendClaim(p.ctx, run, "r2t0", tok, time.Minute)
			wantCode(t, err, 409, "not_extendable")
			st, err = r.c.ClaimStatus(p.ctx, run, "r2t0", tok)
			if err != nil || st.Claim.Active {
				t.Fatalf("claim read after the commit %s %v", st.Raw, err)
			}
			_, err = r.c.ClaimWork(p.ctx, run, "r2t0")
			wantCode(t, err, 409, "task_not_claimable")

			// A waiting row is not running: two steps, the second waits on the first.
			two, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, map[string]any{"key": "first"}), toolStep("screenshot", r.id, map[string]any{"key": "second"})}, "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.c.Commit(p.ctx, two.Run.PublicID, "second", "nxc_x", &client.Result{Content: "x"})
			wantCode(t, err, 409, "task_not_running")
			_, err = r.c.ClaimWork(p.ctx, two.Run.PublicID, "second")
			wantCode(t, err, 409, "task_not_claimable")
			// An unclaimed, dispatched row: any token is stale; extend is not_extendable.
			p.inboxRow(r, two.Run.PublicID, "first")
			_, err = r.c.Commit(p.ctx, two.Run.PublicID, "first", "nxc_x", &client.Result{Content: "x"})
			wantCode(t, err, 409, "stale_claim")
			_, err = r.c.ExtendClaim(p.ctx, two.Run.PublicID, "first", "nxc_x", time.Minute)
			wantCode(t, err, 409, "not_extendable")
		})
	}
}

// TestCreatorWithoutStanding is claim check 7: a run whose creator left the workspace is
// not_authorized for claims.
func TestCreatorWithoutStanding(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0))
			bob, err := p.admin.CreateUser(p.ctx, "default", &client.CreateUserRequest{Handle: "bob", DisplayName: "Bob", Role: "member"})
			if err != nil {
				t.Fatal(err)
			}
			created, err := p.toolRun(p.srv.ClientWith(bob.Token), []any{toolStep("screenshot", r.id, nil)}, "")
			if err != nil {
				t.Fatal(err)
			}
			run := created.Run.PublicID
			p.inboxRow(r, run, "s1-tool-1")
			if err := p.admin.RemoveMember(p.ctx, "default", bob.User.PublicID); err != nil {
				t.Fatal(err)
			}
			_, err = r.c.ClaimWork(p.ctx, run, "s1-tool-1")
			wantCode(t, err, 409, "not_authorized")
		})
	}
}

// TestExpiryRule is scenario 17: with the clock moved past deadlines, unclaimed and replayable
// rows time out, non-replayable claimed rows become uncertain, the claimant is told, its late
// commit is idle, and a claim restarts the clock. The clock is real time plus the advances, so
// every timeout here leaves seconds of real time to a loaded machine before the advance that
// ends it.
func TestExpiryRule(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			deploy := tool("deploy", 0)
			deploy.EffectProfile = profileOf("write", false, "none")
			p.announce(r, tool("screenshot", 0), deploy)
			ev := p.events(r)

			never, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, map[string]any{"timeout_ms": 5000})}, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := ev.next(t); got.Type != "work_available" {
				t.Fatalf("event %s", got.Data)
			}
			readOnly, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, map[string]any{"timeout_ms": 6000})}, "")
			if err != nil {
				t.Fatal(err)
			}
			ev.next(t)
			roTok := p.claimed(r, readOnly.Run.PublicID, "s1-tool-1")
			write := p.modelRun("mock/scripted", "!mock\nround 1\ncall deploy {}\nround 2\nsay {{last_result}}", []any{routed("deploy", r.id)}, nil, "bypass", nil)
			ev.next(t)
			p.claimed(r, write, "r2t0")
			restart, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, map[string]any{"timeout_ms": 30000})}, "")
			if err != nil {
				t.Fatal(err)
			}
			ev.next(t)

			p.clock.Advance(25 * time.Second)
			p.claimed(r, restart.Run.PublicID, "s1-tool-1") // restarts its 30 s clock
			p.clock.Advance(10*time.Minute + time.Second)   // past the write tool's default park
			for _, c := range []struct{ run, key, status, word string }{
				{never.Run.PublicID, "s1-tool-1", "timed_out", "tool_timeout"},
				{readOnly.Run.PublicID, "s1-tool-1", "timed_out", "tool_timeout"},
				{write, "r2t0", "uncertain", "tool_uncertain"},
				{restart.Run.PublicID, "s1-tool-1", "timed_out", "tool_timeout"},
			} {
				tk := p.waitTask(c.run, c.key, c.status)
				if tk.Task.Error == nil || tk.Task.Error.Key != c.word {
					t.Fatalf("%s: %s", c.key, tk.Raw)
				}
			}
			reasons := map[string]string{}
			for i := 0; i < 4; i++ {
				got := ev.next(t)
				if got.Type != "work_canceled" {
					t.Fatalf("event %s", got.Data)
				}
				reasons[got.RunPublicID] = got.Reason
			}
			for _, run := range []string{never.Run.PublicID, readOnly.Run.PublicID, write, restart.Run.PublicID} {
				if reasons[run] != "expired" {
					t.Fatalf("work_canceled reasons %v", reasons)
				}
			}
			late := p.commit(r, readOnly.Run.PublicID, "s1-tool-1", roTok, &client.Result{Content: "late"})
			if late.Applied || late.Task.Status != "timed_out" {
				t.Fatalf("late commit %s", late.Raw)
			}
			if tk := p.task(readOnly.Run.PublicID, "s1-tool-1"); deref(tk.Task.Output) != "" {
				t.Fatalf("late content stored: %s", tk.Raw)
			}
			p.waitRunStatus(write, "completed")
			if fin := p.task(write, "r2"); !strings.Contains(deref(fin.Task.Output), "may have taken effect") {
				t.Fatalf("the model read %q", deref(fin.Task.Output))
			}
		})
	}
}

// TestClaimRestartsTheClock: a row claimed just before its deadline survives a clock advance of
// less than timeout_ms after the claim, and the deadline wins over a commit that comes after it.
func TestClaimRestartsTheClock(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0))
			created, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, map[string]any{"timeout_ms": 10000})}, "")
			if err != nil {
				t.Fatal(err)
			}
			run := created.Run.PublicID
			p.inboxRow(r, run, "s1-tool-1")
			p.clock.Advance(9 * time.Second)
			tok := p.claimed(r, run, "s1-tool-1")
			p.clock.Advance(9 * time.Second)
			time.Sleep(200 * time.Millisecond) // several sweeper passes
			st, err := r.c.ClaimStatus(p.ctx, run, "s1-tool-1", tok)
			if err != nil || !st.Claim.Active {
				t.Fatalf("claim after 9 s of its 10: %s %v", st.Raw, err)
			}
			p.clock.Advance(2 * time.Second)
			res := p.commit(r, run, "s1-tool-1", tok, &client.Result{Content: "too late"})
			if res.Applied || res.Task.Status != "timed_out" {
				t.Fatalf("commit after the deadline %s", res.Raw)
			}
			_, err = r.c.ExtendClaim(p.ctx, run, "s1-tool-1", tok, time.Minute)
			wantCode(t, err, 409, "not_extendable")
		})
	}
}

// TestStop is scenario 20: a stop cancels every open row, the claimant hears run_canceled, its
// commit is idle, and the run and its turn end canceled.
func TestStop(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0), tool("fetch_log", 0))
			agent, err := p.admin.CreateAgent(p.ctx, "default", &client.CreateAgentRequest{Handle: "a", DisplayName: "A"})
			if err != nil {
				t.Fatal(err)
			}
			decl, _ := json.Marshal([]any{routed("screenshot", r.id), routed("fetch_log", r.id)})
			mode := "ask"
			if _, err := p.srv.ClientWith(agent.Token).PutProfileConfiguration(p.ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
				ToolDefinitions: decl, ApprovalMode: &mode, ApprovalRules: json.RawMessage(`[{"tool":"screenshot","verdict":"allow"}]`)}}); err != nil {
				t.Fatal(err)
			}
			conv, err := p.admin.CreateConversation(p.ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID})
			if err != nil {
				t.Fatal(err)
			}
			ev := p.events(r)
			msg, err := p.admin.PostMessage(p.ctx, "default", conv.Conversation.PublicID, map[string]any{
				"text": "!mock\nround 1\ncall screenshot {}\ncall fetch_log {}\nround 2\nsay done"}, "")
			if err != nil {
				t.Fatal(err)
			}
			run := msg.Run.PublicID
			ev.next(t)
			tok := p.claimed(r, run, "r2t0")
			p.waitTask(run, "r2t1", "needs_approval")
			stopped, err := p.admin.StopRun(p.ctx, "default", run, true)
			if err != nil || stopped.Run.Status != "canceled" {
				t.Fatalf("stop %v %v", stopped, err)
			}
			for _, key := range []string{"r2t0", "r2t1", "r2"} {
				if tk := p.task(run, key); tk.Task.Status != "canceled" || tk.Task.Error == nil || tk.Task.Error.Key != "run_canceled" {
					t.Fatalf("%s: %s", key, tk.Raw)
				}
			}
			if got := ev.next(t); got.Type != "work_canceled" || got.TaskKey != "r2t0" || got.Reason != "run_canceled" {
				t.Fatalf("event %s", got.Data)
			}
			if res := p.commit(r, run, "r2t0", tok, &client.Result{Content: "x"}); res.Applied || res.Task.Status != "canceled" {
				t.Fatalf("commit after stop %s", res.Raw)
			}
			if h, err := p.admin.History(p.ctx, "default", conv.Conversation.PublicID, 0, 0); err != nil || len(h.Turns) != 1 || h.Turns[0].Status != "canceled" {
				t.Fatalf("turn after stop: %v %v", h, err)
			}
			_, err = p.admin.StopRun(p.ctx, "default", run, true)
			wantCode(t, err, 409, "already_terminal")
		})
	}
}

// TestApprovalGateOverThePlane is scenario 18's executor side: a held row reaches the Runner only
// when approved, denial reads as a declined call, and a row held past 24 hours expires.
func TestApprovalGateOverThePlane(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0))
			ev := p.events(r)
			rules := map[string]any{"approval_rules": []any{map[string]any{"tool": "memory_*", "verdict": "allow"}}}
			script := "!mock\nround 1\ncall memory_read {\"path\":\"workspace/x.md\"}\ncall screenshot {}\nround 2\nsay {{last_result}}"
			longScript := "!mock\nround 1\ncall memory_read {\"path\":\"workspace/x.md\"}\ncall screenshot {}\ncall fetch_log {}\nround 2\nsay {{last_result}}"
			run := p.modelRun("mock/scripted", script, []any{routed("screenshot", r.id)}, []string{"nexus.memory.read"}, "ask", rules)
			held := p.waitTask(run, "r2t1", "needs_approval")
			if mem := p.waitTask(run, "r2t0", "completed"); !strings.Contains(string(mem.Task.Approval), `"origin":"rule"`) {
				t.Fatalf("memory_read approval %s", mem.Task.Approval)
			}
			if !strings.Contains(string(held.Raw), `"effect_profile"`) {
				t.Fatalf("held %s", held.Raw)
			}
			in, err := p.admin.Inbox(p.ctx, "", 0)
			if err != nil || !strings.Contains(string(in.Raw), `"kind":"approval"`) || !strings.Contains(string(in.Raw), run) {
				t.Fatalf("member inbox %s %v", in.Raw, err)
			}
			ev.quiet(t)
			approved, err := p.admin.Approve(p.ctx, "default", run, "r2t1")
			if err != nil || approved.Task.Status != "dispatched" || !strings.Contains(string(approved.Task.Approval), `"origin":"human"`) {
				t.Fatalf("approve %v %v", approved, err)
			}
			if got := ev.next(t); got.Type != "work_available" || got.TaskKey != "r2t1" {
				t.Fatalf("event %s", got.Data)
			}

			denied := p.modelRun("mock/scripted", script, []any{routed("screenshot", r.id)}, []string{"nexus.memory.read"}, "ask", rules)
			p.waitTask(denied, "r2t1", "needs_approval")
			if _, err := p.admin.Deny(p.ctx, "default", denied, "r2t1", "no"); err != nil {
				t.Fatal(err)
			}
			p.waitRunStatus(denied, "completed")
			if fin := p.task(denied, "r2"); deref(fin.Task.Output) != "<tool_use_error>The tool call was declined at approval. (approval_denied) no</tool_use_error>" {
				t.Fatalf("denied: %q", deref(fin.Task.Output))
			}
			ev.quiet(t)

			// A week-long parked call keeps the run running past the hold's 24 hours.
			week := tool("fetch_log", 7*24*60*60*1000)
			p.announce(r, tool("screenshot", 0), week)
			longRules := map[string]any{"approval_rules": []any{map[string]any{"tool": "memory_*", "verdict": "allow"}, map[string]any{"tool": "fetch_log", "verdict": "allow"}}}
			expiring := p.modelRun("mock/scripted", longScript, []any{routed("screenshot", r.id), routed("fetch_log", r.id)}, []string{"nexus.memory.read"}, "ask", longRules)
			p.waitTask(expiring, "r2t1", "needs_approval")
			p.clock.Advance(24*time.Hour + time.Second)
			if tk := p.waitTask(expiring, "r2t1", "timed_out"); tk.Task.Error == nil || tk.Task.Error.Key != "approval_expired" {
				t.Fatalf("expired hold %s", tk.Raw)
			}
			_, err = p.admin.Approve(p.ctx, "default", expiring, "r2t1")
			wantCode(t, err, 409, "not_awaiting_approval")

			// Mode rules: no rule allows the call, so it is denied as it becomes ready; a deny
			// rule beats an allow rule for the same name. Neither reaches the Runner.
			for name, rules := range map[string]any{
				"no rule":         []any{map[string]any{"tool": "memory_*", "verdict": "allow"}},
				"deny over allow": []any{map[string]any{"tool": "screenshot", "verdict": "allow"}, map[string]any{"tool": "screenshot", "verdict": "deny"}, map[string]any{"tool": "memory_*", "verdict": "allow"}},
			} {
				run := p.modelRun("mock/scripted", script, []any{routed("screenshot", r.id)}, []string{"nexus.memory.read"}, "rules", map[string]any{"approval_rules": rules})
				tk := p.waitTask(run, "r2t1", "failed")
				if tk.Task.Error == nil || tk.Task.Error.Key != "approval_denied" {
					t.Fatalf("%s: %s", name, tk.Raw)
				}
				if name == "no rule" && tk.Task.Error.Detail != "no approval rule allows screenshot" {
					t.Fatalf("%s: detail %q", name, tk.Task.Error.Detail)
				}
				if keys := p.inboxKeys(r, run); len(keys) != 0 {
					t.Fatalf("%s: inbox %v", name, keys)
				}
			}
		})
	}
}

// TestStandaloneRunsAndTheAppendDoor is scenario 24.
func TestStandaloneRunsAndTheAppendDoor(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("screenshot", 0))
			steps := []any{toolStep("screenshot", r.id, nil)}
			first, err := p.toolRun(p.admin, steps, "idem-1")
			if err != nil {
				t.Fatal(err)
			}
			again, err := p.toolRun(p.admin, steps, "idem-1")
			if err != nil || !again.Replayed || again.Run.PublicID != first.Run.PublicID {
				t.Fatalf("replay %v %v", again, err)
			}
			_, err = p.toolRun(p.admin, []any{toolStep("screenshot", r.id, map[string]any{"timeout_ms": 5000})}, "idem-1")
			wantCode(t, err, 409, "idempotency_envelope_mismatch")
			run := first.Run.PublicID
			tok := p.claimed(r, run, "s1-tool-1")
			p.commit(r, run, "s1-tool-1", tok, &client.Result{Content: "the page"})
			done := p.waitRunStatus(run, "completed")
			if deref(done.Answer) != "the page" {
				t.Fatalf("answer %q", deref(done.Answer))
			}
			for _, name := range []string{"memory_read", "nexus.memory.read"} {
				_, err := p.admin.AppendSteps(p.ctx, "default", run, map[string]any{"steps": []any{map[string]any{"tool": map[string]any{"name": name}}}}, "")
				ce := wantCode(t, err, 422, "reserved_tool_name")
				if string(ce.Extra["path"]) != `"steps[0].tool.name"` {
					t.Fatalf("path %s", ce.Extra["path"])
				}
			}
			pending, err := p.admin.CreateRun(p.ctx, "default", map[string]any{"steps": steps, "approval_mode": "bypass", "start": false}, "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.admin.AppendSteps(p.ctx, "default", pending.Run.PublicID, map[string]any{"steps": steps, "expected_revision": 7}, "")
			ce := wantCode(t, err, 409, "stale_revision")
			if string(ce.Extra["current_revision"]) != "1" {
				t.Fatalf("current_revision %s", ce.Extra["current_revision"])
			}
		})
	}
}
