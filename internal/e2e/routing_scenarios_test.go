package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestPairingLawOverThePlane is scenario 8: the script with read_file routed to a
// (docs/mock.md#examples) Runner; the round waits on all five calls and runs after the Runner
// commits the two that run.
func TestPairingLawOverThePlane(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		for _, finish := range []string{"tool_calls", "length"} {
			t.Run(string(d)+"/"+finish, func(t *testing.T) {
				t.Parallel()
				p := newPlane(t, d)
				r := p.executor("runner", "laptop")
				p.announce(r, tool("read_file", 0))
				longID := strings.Repeat("X", 200)
				script := "Exercise the pairing law.\n!mock\nround 1\ncall read_file {\"path\": \"a.txt\"}\ncall read_file {\"path\":\ncall no_such_tool {}\nbigcall read_file 70000\n" +
					"call read_file#" + longID + " {\"path\": \"b.txt\"}\nfinish " + finish + "\nround 2\nsay {{last_result}}"
				run := p.modelRun("mock/scripted", script, []any{routed("read_file", r.id)}, nil, "bypass", nil)
				wantKey := map[string]string{"r2t1": "invalid_tool_arguments", "r2t2": "unknown_tool", "r2t3": "tool_input_too_large"}
				if finish == "length" {
					wantKey["r2t1"] = "truncated_tool_arguments"
				}
				for key, word := range wantKey {
					tk := p.waitTask(run, key, "failed")
					if tk.Task.Error == nil || tk.Task.Error.Key != word {
						t.Fatalf("%s: %s", key, tk.Raw)
					}
				}
				if in := p.task(run, "r2t3").Task.ToolInput; string(in) != "null" {
					t.Fatalf("r2t3 tool_input %s", in)
				}
				r2t4 := p.inboxRow(r, run, "r2t4")
				if !strings.HasPrefix(r2t4.ToolCallID, "kc_") {
					t.Fatalf("r2t4 tool_call_id %q", r2t4.ToolCallID)
				}
				if tk := p.task(run, "r2"); tk.Task.Status != "waiting" || len(tk.Task.After) != 5 {
					t.Fatalf("r2 %s", tk.Raw)
				}
				for _, key := range []string{"r2t0", "r2t4"} {
					tok := p.claimed(r, run, key)
					p.commit(r, run, key, tok, &client.Result{Content: "read " + key})
				}
				p.waitRunStatus(run, "completed")
				entries := p.sealedEntries(run, "r2")
				var tools []string
				for _, e := range entries {
					if strings.HasPrefix(string(e), `{"role":"tool"`) {
						tools = append(tools, string(e))
					}
				}
				if len(tools) != 5 || strings.Count(strings.Join(tools, "\n"), "<tool_use_error>") != 3 {
					t.Fatalf("tool entries %q", tools)
				}
				if !strings.HasPrefix(tools[4], `{"role":"tool","tool_call_id":"`+longID+`","name":"read_file","is_error":false,"content":[{"type":"text","text":"read r2t4"}]}`) {
					t.Fatalf("r2t4 entry %s", tools[4])
				}
			})
		}
	}
}

// TestUndeclaredKernelToolsFailAtBirth is scenario 9: an undeclared delegate_task is born
// unknown_tool and never reaches an inbox; a declared tool routed to a revoked Runner is born
// tool_not_served.
func TestUndeclaredKernelToolsFailAtBirth(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			gone := p.executor("runner", "gone")
			p.announce(r, tool("screenshot", 0))
			p.announce(gone, tool("scan", 0))
			script := "!mock\nround 1\ncall delegate_task {\"prompt\":\"x\"}\ncall screenshot {}\nround 2\ncall scan {}\nround 3\nsay {{last_result}}"
			run := p.modelRun("mock/scripted", script, []any{routed("screenshot", r.id), routed("scan", gone.id)}, nil, "bypass", nil)
			born := p.waitTask(run, "r2t0", "failed")
			if born.Task.Error == nil || born.Task.Error.Key != "unknown_tool" {
				t.Fatalf("delegate_task %s", born.Raw)
			}
			tok := p.claimed(r, run, "r2t1")
			if keys := p.inboxKeys(r, run); contains(keys, "r2t0") {
				t.Fatalf("inbox %v", keys)
			}
			if _, err := p.admin.RevokeExecutor(p.ctx, gone.id); err != nil {
				t.Fatal(err)
			}
			p.commit(r, run, "r2t1", tok, &client.Result{Content: "shot"})
			scan := p.waitTask(run, "r3t0", "failed")
			if scan.Task.Error == nil || scan.Task.Error.Key != "tool_not_served" {
				t.Fatalf("scan %s", scan.Raw)
			}
			p.waitRunStatus(run, "completed")
			for _, e := range p.sealedEntries(run, "r2") {
				if strings.Contains(string(e), `"tool_call_id":"mock_r1_0"`) {
					if !strings.Contains(string(e), `<tool_use_error>The tool call could not run. (unknown_tool) `) {
						t.Fatalf("delegate_task entry %s", e)
					}
				}
			}
		})
	}
}

// TestKernelRowsHaveNoAddressee is scenario 10: every executor gets not_addressed_here on a kernel
// tool row, whatever token it sends.
func TestKernelRowsHaveNoAddressee(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			pr := p.executor("tool_provider", "p")
			p.announce(pr, tool("memory_write", 0))
			run := p.modelRun("mock/scripted", "!mock\nround 1\ncall memory_write {\"path\":\"workspace/a.md\",\"content\":\"a\"}\nround 2\nsay ok",
				nil, []string{"nexus.memory.write"}, "bypass", nil)
			p.waitRunStatus(run, "completed")
			for _, e := range []*executor{r, pr} {
				_, err := e.c.ClaimWork(p.ctx, run, "r2t0")
				wantCode(t, err, 409, "not_addressed_here")
				_, err = e.c.Commit(p.ctx, run, "r2t0", "nxc_whatever", &client.Result{Content: "forged"})
				wantCode(t, err, 409, "not_addressed_here")
				_, err = e.c.ClaimStatus(p.ctx, run, "r2t0", "nxc_whatever")
				wantCode(t, err, 409, "not_addressed_here")
				_, err = e.c.ExtendClaim(p.ctx, run, "r2t0", "nxc_whatever", 1000)
				wantCode(t, err, 409, "not_addressed_here")
			}
			// The model round itself is not addressed to anyone either.
			_, err := r.c.ClaimWork(p.ctx, run, "s1-model-1")
			wantCode(t, err, 409, "not_addressed_here")
		})
	}
}

// TestPools is scenario 11: tool providers announcing a name form its pool; the first claim
// wins; a Runner announcing it is never a member; membership is whoever announces it now.
func TestPools(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			pe, q, r := p.executor("tool_provider", "p"), p.executor("tool_provider", "q"), p.executor("runner", "r")
			for _, e := range []*executor{pe, q, r} {
				p.announce(e, tool("lookup", 0))
			}
			pEv, qEv, rEv := p.events(pe), p.events(q), p.events(r)
			script := "!mock\nround 1\ncall lookup {\"q\":\"x\"}\nround 2\nsay {{last_result}}"
			run := p.modelRun("mock/scripted", script, []any{plain("lookup")}, nil, "bypass", nil)
			for _, ev := range []*events{pEv, qEv} {
				if got := ev.next(t); got.Type != "work_available" || got.TaskKey != "r2t0" || got.ToolName != "lookup" {
					t.Fatalf("pool event %s %s", got.Type, got.Data)
				}
			}
			rEv.quiet(t)
			row := p.inboxRow(q, run, "r2t0")
			if string(row.AddressedTo) != `{"role":"tool_provider"}` {
				t.Fatalf("addressed_to %s", row.AddressedTo)
			}
			if keys := p.inboxKeys(r, run); len(keys) != 0 {
				t.Fatalf("runner inbox %v", keys)
			}
			_, err := r.c.ClaimWork(p.ctx, run, "r2t0")
			wantCode(t, err, 409, "not_addressed_here")
			cl := p.claim(pe, run, "r2t0")
			_, err = q.c.ClaimWork(p.ctx, run, "r2t0")
			wantCode(t, err, 409, "already_claimed")
			if keys := p.inboxKeys(q, run); len(keys) != 0 {
				t.Fatalf("q still lists %v", keys)
			}
			if keys := p.inboxKeys(pe, run); !contains(keys, "r2t0") {
				t.Fatalf("the claimant's inbox %v", keys)
			}
			qEv.quiet(t) // another member's claim is not a cancel
			// The claim is its claimant's alone: another member presenting the claimant's own
			// token learns nothing of the row, on read, extend and commit alike.
			tok := cl.Claim.ClaimToken
			before := p.task(run, "r2t0")
			notFound := func(what string, err error) {
				t.Helper()
				if ce := wantCode(t, err, 404, "not_found"); ce.Message != "No task r2t0 in this run." {
					t.Fatalf("%s: %q", what, ce.Message)
				}
			}
			_, err = q.c.ClaimStatus(p.ctx, run, "r2t0", tok)
			notFound("claim read", err)
			_, err = q.c.ExtendClaim(p.ctx, run, "r2t0", tok, time.Minute)
			notFound("extend", err)
			_, err = q.c.Commit(p.ctx, run, "r2t0", tok, &client.Result{Content: "stolen"})
			notFound("commit", err)
			if after := p.task(run, "r2t0"); after.Task.Status != "dispatched" || *after.Task.DeadlineAt != *before.Task.DeadlineAt {
				t.Fatalf("another member moved the row: %s", after.Raw)
			}
			p.commit(pe, run, "r2t0", tok, &client.Result{Content: "found"})
			p.waitRunStatus(run, "completed")
			// Settled, the row still answers its claimant only.
			_, err = q.c.Commit(p.ctx, run, "r2t0", tok, &client.Result{Content: "stolen"})
			notFound("commit after settling", err)
			_, err = q.c.ClaimStatus(p.ctx, run, "r2t0", tok)
			notFound("claim read after settling", err)
			if res := p.commit(pe, run, "r2t0", tok, &client.Result{Content: "again"}); res.Applied {
				t.Fatalf("the claimant's repeat applied: %s", res.Raw)
			}

			p.announce(q, tool("other", 0))
			run2 := p.modelRun("mock/scripted", script, []any{plain("lookup")}, nil, "bypass", nil)
			if got := pEv.next(t); got.RunPublicID != run2 {
				t.Fatalf("p: %s", got.Data)
			}
			qEv.quiet(t)
			p.inboxRow(pe, run2, "r2t0")
			if keys := p.inboxKeys(q, run2); len(keys) != 0 {
				t.Fatalf("q, no longer announcing, lists %v", keys)
			}
			// A pool member that stopped announcing the name may not claim it.
			_, err = q.c.ClaimWork(p.ctx, run2, "r2t0")
			wantCode(t, err, 409, "not_eligible")

			p.announce(pe, tool("other", 0))
			run3 := p.modelRun("mock/scripted", script, []any{plain("lookup")}, nil, "bypass", nil)
			nobody := p.waitTask(run3, "r2t0", "failed")
			if nobody.Task.Error == nil || nobody.Task.Error.Key != "tool_not_served" || nobody.Task.Error.Detail != "no executor announces lookup in this workspace" {
				t.Fatalf("nobody: %s", nobody.Raw)
			}
		})
	}
}

// TestPoolProfileIsTheStrictest checks docs/development.md#how-the-kernel-runs-work over the plane:
// the frozen profile of a pool row is the strictest across its members and the smallest announced
// timeout.
func TestPoolProfileIsTheStrictest(t *testing.T) {
	t.Parallel()
	p := newPlane(t, "sqlite")
	a, b := p.executor("tool_provider", "a"), p.executor("tool_provider", "b")
	ta := tool("lookup", 9000)
	tb := tool("lookup", 5000)
	tb.EffectProfile = &announce.AnnouncedProfile{Kind: "write", Destructive: ptrTo(true), EffectScope: "closed", Idempotency: "keyed", Reconciliation: "lookup"}
	p.announce(a, ta)
	p.announce(b, tb)
	run := p.modelRun("mock/scripted", "!mock\nround 1\ncall lookup {}\nround 2\nsay x", []any{plain("lookup")}, nil, "bypass", nil)
	row := p.inboxRow(a, run, "r2t0")
	want := `{"kind":"write","destructive":true,"effect_scope":"open","idempotency":"keyed","reconciliation":"none","timeout_ms":5000}`
	if string(row.EffectProfile) != want || row.TimeoutMS != 5000 {
		t.Fatalf("pool profile %s timeout %d", row.EffectProfile, row.TimeoutMS)
	}
}
