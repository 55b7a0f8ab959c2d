package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// transitionFixture is a run of three running rows, the second claimed (generation 3, token
// "nxc_held"), and another run's row, on one store.
type transitionFixture struct {
	s     *store.Store
	run   *store.Run
	rows  []store.TaskTrace
	fence store.Fence
}

func newTransitionFixture(t *testing.T, s *store.Store) *transitionFixture {
	t.Helper()
	ctx := context.Background()
	r, rows := seedRunRows(t, s, 3)
	seedRun(t, s, 1) // another run's row
	f := &transitionFixture{s: s, run: r, rows: rows, fence: store.Fence{Generation: 3, TokenHash: store.HashClaimToken("nxc_held")}}
	f.write(t, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE tasks SET claim_generation = ?, claim_token_hash = ?, claimed_by = ?, claimed_at = ? WHERE id = ?`,
			f.fence.Generation, f.fence.TokenHash, `{"kernel":true}`, 5, rows[1].ID)
		return err
	})
	return f
}

func (f *transitionFixture) write(t *testing.T, fn func(tx *store.Tx) error) {
	t.Helper()
	if err := f.s.Write(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func (f *transitionFixture) row(t *testing.T, i int) store.Task {
	t.Helper()
	got, err := store.TaskByID(context.Background(), f.s.Reader(), f.rows[i].ID)
	if err != nil {
		t.Fatal(err)
	}
	return *got
}

// refused runs a statement that must find a guard failed: it answers false, and row i reads
// back exactly as before.
func (f *transitionFixture) refused(t *testing.T, i int, what string, exec func(tx *store.Tx) (bool, error)) {
	t.Helper()
	before := f.row(t, i)
	f.write(t, func(tx *store.Tx) error {
		ok, err := exec(tx)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%s: a guard that does not hold took the row", what)
		}
		return nil
	})
	if after := f.row(t, i); !reflect.DeepEqual(after, before) {
		t.Fatalf("%s: a refused statement wrote the row\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// took runs a statement that must take its row.
func (f *transitionFixture) took(t *testing.T, what string, exec func(tx *store.Tx) (bool, error)) {
	t.Helper()
	f.write(t, func(tx *store.Tx) error {
		ok, err := exec(tx)
		if err == nil && !ok {
			err = fmt.Errorf("%s: the statement did not take its row", what)
		}
		return err
	})
}

// fenceGuards are the claim guards that do not hold for the fixture's claimed row: another
// generation, another token.
func (f *transitionFixture) fenceGuards() map[string]store.Fence {
	return map[string]store.Fence{
		"a stale generation": {Generation: f.fence.Generation - 1, TokenHash: f.fence.TokenHash},
		"another token":      {Generation: f.fence.Generation, TokenHash: store.HashClaimToken("nxc_other")},
	}
}

// TestDispatchAndHold: a dispatch parks the row with its clock and writes the gate's ready_at and
// record only when given; a row whose executor is revoked does not park, and nothing is written;
// a hold writes the gate's hold.
func TestDispatchAndHold(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		revoked := &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: f.run.WorkspaceID, Kind: store.ExecutorRunner, DisplayName: "r", Status: store.ExecutorRevoked}
		active := &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: f.run.WorkspaceID, Kind: store.ExecutorRunner, DisplayName: "a", Status: store.ExecutorActive}
		f.write(t, func(tx *store.Tx) error {
			if err := store.InsertExecutor(ctx, tx, revoked); err != nil {
				return err
			}
			return store.InsertExecutor(ctx, tx, active)
		})
		approval := &store.Approval{Origin: "policy", DecidedAt: "2025-01-01T00:00:00.000Z"}
		f.refused(t, 0, "dispatch to a revoked executor", func(tx *store.Tx) (bool, error) {
			return store.Dispatch{ID: f.rows[0].ID, Status: "dispatched", At: 50, Deadline: ptr(int64(90)), ReadyAt: ptr(int64(50)),
				Approval: approval, UnlessRevoked: revoked.PublicID}.Exec(ctx, tx)
		})
		f.took(t, "dispatch", func(tx *store.Tx) (bool, error) {
			return store.Dispatch{ID: f.rows[0].ID, Status: "dispatched", At: 50, Deadline: ptr(int64(90)), ReadyAt: ptr(int64(49)),
				Approval: approval, UnlessRevoked: active.PublicID}.Exec(ctx, tx)
		})
		got := f.row(t, 0)
		if got.Status != "dispatched" || deref(got.DispatchedAt) != 50 || deref(got.DeadlineAt) != 90 || deref(got.ReadyAt) != 49 ||
			!reflect.DeepEqual(got.Approval, approval) {
			t.Fatalf("dispatched row %+v", got.TaskTrace)
		}
		// A round queued for the kernel has no park deadline; what is not given is kept.
		f.took(t, "queue", func(tx *store.Tx) (bool, error) {
			return store.Dispatch{ID: f.rows[0].ID, Status: "running", At: 60}.Exec(ctx, tx)
		})
		got = f.row(t, 0)
		if got.Status != "running" || deref(got.DispatchedAt) != 60 || got.DeadlineAt != nil || deref(got.ReadyAt) != 49 ||
			!reflect.DeepEqual(got.Approval, approval) {
			t.Fatalf("queued row %+v", got.TaskTrace)
		}
		f.write(t, func(tx *store.Tx) error {
			return store.Hold{ID: f.rows[2].ID, Status: "needs_approval", ReadyAt: 70, Deadline: 80}.Exec(ctx, tx)
		})
		if got := f.row(t, 2); got.Status != "needs_approval" || deref(got.ReadyAt) != 70 || deref(got.DeadlineAt) != 80 {
			t.Fatalf("held row %+v", got.TaskTrace)
		}
	})
}

// TestFailAndSettleNumbers: a settle computes its settlement number in its own statement, the one
// NextSettleSeq reads before it (1 for a run's first, then one more than its run's largest,
// another run's not counting), and answers the row's trace as it left it.
func TestFailAndSettleNumbers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		f.write(t, func(tx *store.Tx) error {
			// Another run's settle numbers do not count.
			_, err := tx.Exec(ctx, `UPDATE tasks SET settle_seq = 40 WHERE run_id <> ?`, f.run.ID)
			return err
		})
		settles := []func(tx *store.Tx, into *store.TaskTrace) (bool, error){
			func(tx *store.Tx, into *store.TaskTrace) (bool, error) {
				return store.Fail{ID: f.rows[0].ID, Status: "canceled", Error: store.Failure{Key: "run_canceled"}, At: 7}.Exec(ctx, tx, into)
			},
			func(tx *store.Tx, into *store.TaskTrace) (bool, error) {
				return store.Settle{ID: f.rows[2].ID, Status: "completed", Result: store.Result{Output: "ok"}, At: 8, From: "running"}.Exec(ctx, tx, into)
			},
		}
		for i, settle := range settles {
			var into store.TaskTrace
			f.write(t, func(tx *store.Tx) error {
				before, err := store.NextSettleSeq(ctx, tx, f.run.ID)
				if err != nil {
					return err
				}
				if _, err := settle(tx, &into); err != nil {
					return err
				}
				trace, err := store.TraceTasks(ctx, tx, f.run.ID)
				if err != nil {
					return err
				}
				want := int64(i + 1)
				if deref(into.SettleSeq) != want || before != want {
					return fmt.Errorf("settle %d: wrote %d, NextSettleSeq read %d, want %d", i, deref(into.SettleSeq), before, want)
				}
				for _, tr := range trace {
					if tr.ID == into.ID && !reflect.DeepEqual(tr, into) {
						return fmt.Errorf("settle %d answered\n%+v\nthe trace reads\n%+v", i, into, tr)
					}
				}
				return nil
			})
		}
	})
}

// TestFail: a row that ends without a result settles with its status, error and empty output,
// and with the gate's ready_at and record and the cancel's resolution when given, keeping what
// it does not name (its title, the child it awaited); a guard that does not hold writes nothing.
func TestFail(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		f.write(t, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE tasks SET title = 'tool call', awaiting_child = 'k0-call-1' WHERE id = ?`, f.rows[0].ID)
			return err
		})
		f.refused(t, 0, "a settle from another status", func(tx *store.Tx) (bool, error) {
			return store.Fail{ID: f.rows[0].ID, Status: "failed", Error: store.Failure{Key: "k"}, At: 9, From: "dispatched"}.Exec(ctx, tx, nil)
		})
		for name, fence := range f.fenceGuards() {
			f.refused(t, 1, name, func(tx *store.Tx) (bool, error) {
				return store.Fail{ID: f.rows[1].ID, Status: "failed", Error: store.Failure{Key: "k"}, At: 9, From: "running", Claim: &fence}.Exec(ctx, tx, nil)
			})
		}
		f.took(t, "the claimant's settle", func(tx *store.Tx) (bool, error) {
			return store.Fail{ID: f.rows[1].ID, Status: "failed", Error: store.Failure{Key: "provider_error", Detail: "boom"}, At: 9,
				From: "running", Claim: &f.fence}.Exec(ctx, tx, nil)
		})
		if got := f.row(t, 1); got.Status != "failed" || deref(got.ErrorKey) != "provider_error" || deref(got.ErrorDetail) != "boom" ||
			deref(got.Output) != "" || got.Output == nil || deref(got.CompletedAt) != 9 || got.FailureResolution != nil || got.IsError != nil {
			t.Fatalf("failed row %+v", got)
		}
		approval := &store.Approval{Origin: "human", DecidedBy: &store.Member{Kind: "user", PublicID: "u"}, DecidedAt: "2025-01-01T00:00:00.000Z"}
		f.took(t, "a canceled wait", func(tx *store.Tx) (bool, error) {
			return store.Fail{ID: f.rows[0].ID, Status: "canceled", Error: store.Failure{Key: "task_canceled"}, At: 10,
				ReadyAt: ptr(int64(4)), Approval: approval, Resolution: ptr("canceled")}.Exec(ctx, tx, nil)
		})
		got := f.row(t, 0)
		if got.Status != "canceled" || deref(got.ErrorKey) != "task_canceled" || got.ErrorDetail != nil || deref(got.ReadyAt) != 4 ||
			!reflect.DeepEqual(got.Approval, approval) || deref(got.FailureResolution) != "canceled" ||
			deref(got.Title) != "tool call" || deref(got.AwaitingChild) != "k0-call-1" {
			t.Fatalf("canceled row %+v", got)
		}
	})
}

// TestSettle: a row settles with its result, its error, who resolved it and, when given, the
// delivery that took it; it stops awaiting a child and keeps its title unless given one. A
// status or a claim that does not hold writes nothing. ExecTrace answers the run's every row as
// a trace read after it would, and no trace when a guard does not hold.
func TestSettle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		f.write(t, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE tasks SET title = 'tool call', awaiting_child = 'k0-call-1' WHERE id = ?`, f.rows[0].ID)
			return err
		})
		result := store.Result{IsError: ptr(true), Output: "out", Content: ptr(`[{"type":"text","text":"out"}]`),
			StructuredContent: ptr(`{"a":1}`), Metadata: ptr(`{"m":2}`)}
		f.refused(t, 0, "a settle from another status", func(tx *store.Tx) (bool, error) {
			return store.Settle{ID: f.rows[0].ID, Status: "completed", Result: result, At: 9, From: "dispatched"}.Exec(ctx, tx, nil)
		})
		for name, fence := range f.fenceGuards() {
			f.refused(t, 1, name, func(tx *store.Tx) (bool, error) {
				return store.Settle{ID: f.rows[1].ID, Status: "completed", Result: result, At: 9, From: "running", Claim: &fence}.Exec(ctx, tx, nil)
			})
			f.refused(t, 1, name+" (with the trace)", func(tx *store.Tx) (bool, error) {
				ok, trace, err := store.Settle{ID: f.rows[1].ID, Status: "completed", Result: result, At: 9, From: "running", Claim: &fence}.ExecTrace(ctx, tx, f.run.ID)
				if trace != nil {
					return true, fmt.Errorf("a refused settle answered a trace of %d rows", len(trace))
				}
				return ok, err
			})
		}
		by := &store.Member{Kind: "kernel"}
		f.took(t, "an observed settle", func(tx *store.Tx) (bool, error) {
			return store.Settle{ID: f.rows[0].ID, Status: "failed", Result: result, Error: &store.Failure{Key: "await_failed", Detail: "no"},
				ResolvedBy: by, DeliveredWith: "k9", At: 9, From: "running"}.Exec(ctx, tx, nil)
		})
		got := f.row(t, 0)
		if got.Status != "failed" || !deref(got.IsError) || deref(got.Output) != "out" || deref(got.Content) != *result.Content ||
			deref(got.StructuredContent) != *result.StructuredContent || deref(got.Metadata) != *result.Metadata ||
			deref(got.Title) != "tool call" || got.AwaitingChild != nil || deref(got.ErrorKey) != "await_failed" ||
			deref(got.ErrorDetail) != "no" || !reflect.DeepEqual(got.ResolvedBy, by) || deref(got.DeliveredWith) != "k9" ||
			deref(got.ResultDeliveredAt) != 9 || deref(got.CompletedAt) != 9 {
			t.Fatalf("settled row %+v", got)
		}
		var trace []store.TaskTrace
		f.took(t, "the claimant's settle", func(tx *store.Tx) (bool, error) {
			ok, tr, err := store.Settle{ID: f.rows[1].ID, Status: "completed", Result: store.Result{Output: "done", Title: ptr("T")},
				At: 11, From: "running", Claim: &f.fence}.ExecTrace(ctx, tx, f.run.ID)
			if err != nil {
				return false, err
			}
			after, err := store.TraceTasks(ctx, tx, f.run.ID)
			if err != nil {
				return false, err
			}
			if !reflect.DeepEqual(tr, after) {
				return false, fmt.Errorf("the settle's trace\n%+v\nthe trace read after it\n%+v", tr, after)
			}
			trace = tr
			return ok, nil
		})
		if len(trace) != 3 || trace[1].Status != "completed" || deref(trace[1].SettleSeq) != 2 || trace[2].Status != "running" {
			t.Fatalf("trace %+v", trace)
		}
		if got := f.row(t, 1); deref(got.Title) != "T" || got.ResolvedBy != nil || got.DeliveredWith != nil || got.Content != nil || got.ErrorKey != nil {
			t.Fatalf("settled claimed row %+v", got)
		}
	})
}

// TestSettleRound: a claimed round settles with its answer and, when its expansion moved them,
// its run's round counter and deliverable, and answers the run's trace as a read after it would;
// a claim that does not hold writes nothing to the round and answers no trace.
func TestSettleRound(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		round := store.SettleRound{ID: f.rows[1].ID, Status: "completed", Output: "text", Finish: "tool_calls",
			Usage: &store.Usage{InputTokens: 3, OutputTokens: 4}, Content: ptr(`[{"type":"text","text":"text"}]`),
			AnswerContent: ptr(`[{"type":"text","text":"text"}]`), Calls: store.AnswerCalls{{ID: "c", Name: "n", TaskKey: "r2t0"}},
			At: 12, From: "running", Run: &store.RoundMove{Counter: ptr(int64(2)), Deliverable: ptr("r2")}}
		for name, fence := range f.fenceGuards() {
			f.refused(t, 1, name, func(tx *store.Tx) (bool, error) {
				r := round
				r.Claim = fence
				ok, trace, err := r.Exec(ctx, tx, f.run.ID)
				if trace != nil {
					return true, fmt.Errorf("a refused settle answered a trace of %d rows", len(trace))
				}
				return ok, err
			})
		}
		round.Claim = f.fence
		f.took(t, "the round's settle", func(tx *store.Tx) (bool, error) {
			ok, trace, err := round.Exec(ctx, tx, f.run.ID)
			if err != nil {
				return false, err
			}
			after, err := store.TraceTasks(ctx, tx, f.run.ID)
			if err != nil {
				return false, err
			}
			if !reflect.DeepEqual(trace, after) || len(trace) != 3 {
				return false, fmt.Errorf("the settle's trace\n%+v\nthe trace read after it\n%+v", trace, after)
			}
			return ok, nil
		})
		got := f.row(t, 1)
		if got.Status != "completed" || deref(got.Output) != "text" || deref(got.Finish) != "tool_calls" || !reflect.DeepEqual(got.Usage, round.Usage) ||
			deref(got.IsError) || got.IsError == nil || deref(got.Content) != *round.Content || deref(got.AnswerContent) != *round.AnswerContent ||
			!reflect.DeepEqual(got.AnswerCalls, round.Calls) || got.ErrorKey != nil || deref(got.SettleSeq) != 1 || deref(got.CompletedAt) != 12 {
			t.Fatalf("settled round %+v", got)
		}
		run, err := store.RunByID(ctx, s.Reader(), f.run.ID)
		if err != nil || run.MainlineRoundCounter != 2 || run.DeliverableTaskKey != "r2" {
			t.Fatalf("run %+v, %v", run, err)
		}
		// A round whose expansion was refused moves nothing on its run, and carries the refusal.
		other := store.Fence{Generation: 1, TokenHash: store.HashClaimToken("nxc_two")}
		f.write(t, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE tasks SET claim_generation = ?, claim_token_hash = ? WHERE id = ?`, other.Generation, other.TokenHash, f.rows[2].ID)
			return err
		})
		refusedRound := store.SettleRound{ID: f.rows[2].ID, Status: "failed", Finish: "tool_calls", Error: &store.Failure{Key: "round_expansion_refused", Detail: "round_limit"},
			At: 13, From: "running", Claim: other}
		f.took(t, "a refused expansion", func(tx *store.Tx) (bool, error) {
			ok, _, err := refusedRound.Exec(ctx, tx, f.run.ID)
			return ok, err
		})
		if got := f.row(t, 2); got.Status != "failed" || deref(got.ErrorKey) != "round_expansion_refused" || deref(got.ErrorDetail) != "round_limit" ||
			got.AnswerCalls != nil || got.Usage != nil {
			t.Fatalf("refused round %+v", got)
		}
		if run, err := store.RunByID(ctx, s.Reader(), f.run.ID); err != nil || run.MainlineRoundCounter != 2 || run.DeliverableTaskKey != "r2" {
			t.Fatalf("a round that moved nothing moved its run: %+v, %v", run, err)
		}
	})
}

// TestAwaitChildReleaseExtend: a claimed call waits on its child, lowered and out of its claim
// and clock, under its title; a release clears a claim and its clock; an extension moves a
// claimed row's deadline. The claimed writes refuse a claim that does not hold.
func TestAwaitChildReleaseExtend(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		for name, fence := range f.fenceGuards() {
			f.refused(t, 1, name, func(tx *store.Tx) (bool, error) {
				return store.AwaitChild{ID: f.rows[1].ID, Child: "k1-call-1", From: "running", Claim: fence}.Exec(ctx, tx)
			})
			f.refused(t, 1, name+" (extend)", func(tx *store.Tx) (bool, error) {
				return store.Extend{ID: f.rows[1].ID, Deadline: 99, From: "running", Claim: fence}.Exec(ctx, tx)
			})
		}
		f.refused(t, 1, "an extension of a row in another status", func(tx *store.Tx) (bool, error) {
			return store.Extend{ID: f.rows[1].ID, Deadline: 99, From: "dispatched", Claim: f.fence}.Exec(ctx, tx)
		})
		f.took(t, "extend", func(tx *store.Tx) (bool, error) {
			return store.Extend{ID: f.rows[1].ID, Deadline: 99, From: "running", Claim: f.fence}.Exec(ctx, tx)
		})
		if got := f.row(t, 1); deref(got.DeadlineAt) != 99 || got.ClaimGeneration != f.fence.Generation {
			t.Fatalf("extended row %+v", got.TaskTrace)
		}
		f.took(t, "await", func(tx *store.Tx) (bool, error) {
			return store.AwaitChild{ID: f.rows[1].ID, Child: "k1-call-1", Title: ptr("tool call"), From: "running", Claim: f.fence}.Exec(ctx, tx)
		})
		got := f.row(t, 1)
		if deref(got.AwaitingChild) != "k1-call-1" || !got.Lowered || got.DeadlineAt != nil || got.ClaimedAt != nil || got.ClaimedBy != nil ||
			got.ClaimTokenHash != nil || deref(got.Title) != "tool call" || got.Status != "running" {
			t.Fatalf("waiting call %+v", got)
		}
		f.write(t, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE tasks SET claimed_at = 1, claimed_by = ?, claim_token_hash = ?, deadline_at = 2 WHERE id = ?`,
				`{"executor_public_id":"e"}`, []byte("h"), f.rows[2].ID)
			if err != nil {
				return err
			}
			return store.Release{ID: f.rows[2].ID}.Exec(ctx, tx)
		})
		if got := f.row(t, 2); got.ClaimedAt != nil || got.ClaimedBy != nil || got.ClaimTokenHash != nil || got.DeadlineAt != nil || got.Status != "running" {
			t.Fatalf("released row %+v", got)
		}
	})
}

// TestReleaseClaim: a release ends a claim of a parked row by its generation alone (the releaser
// holds no token): the row stays in its status, without claimant, token, claim time or instance,
// its generation kept and its park's clock restarted. Another generation, another status, or a
// row no longer claimed is refused and nothing is written.
func TestReleaseClaim(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		f.write(t, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE tasks SET status = 'dispatched', claimed_instance = 'inst_dead', deadline_at = 40 WHERE id = ?`, f.rows[1].ID)
			return err
		})
		release := func(from string, gen int64) func(tx *store.Tx) (bool, error) {
			return func(tx *store.Tx) (bool, error) {
				return store.ReleaseClaim{ID: f.rows[1].ID, Deadline: 5000, From: from, Generation: gen}.Exec(ctx, tx)
			}
		}
		f.refused(t, 1, "a release of another generation", release("dispatched", f.fence.Generation-1))
		f.refused(t, 1, "a release of a row in another status", release("running", f.fence.Generation))
		f.took(t, "release", release("dispatched", f.fence.Generation))
		got := f.row(t, 1)
		if got.Status != "dispatched" || got.ClaimedAt != nil || got.ClaimedBy != nil || got.ClaimTokenHash != nil ||
			got.ClaimGeneration != f.fence.Generation || deref(got.DeadlineAt) != 5000 {
			t.Fatalf("released row %+v", got)
		}
		var instance *string
		if err := s.Reader().Get(ctx, &instance, `SELECT claimed_instance FROM tasks WHERE id = ?`, f.rows[1].ID); err != nil || instance != nil {
			t.Fatalf("the released row's instance: %v %v", instance, err)
		}
		f.refused(t, 1, "a release of a row no longer claimed", release("dispatched", f.fence.Generation))
	})
}

// TestDeliverAndRepoint: a delivery marks a row's result delivered, with what carried it; a
// repoint replaces a row's predecessors.
func TestDeliverAndRepoint(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		f.write(t, func(tx *store.Tx) error {
			if err := (store.Deliver{ID: f.rows[0].ID, With: "turn:x", At: 21}).Exec(ctx, tx); err != nil {
				return err
			}
			return store.Repoint{ID: f.rows[2].ID, After: store.Strings{"k0", "r3"}}.Exec(ctx, tx)
		})
		if got := f.row(t, 0); deref(got.DeliveredWith) != "turn:x" || deref(got.ResultDeliveredAt) != 21 {
			t.Fatalf("delivered row %+v", got.TaskTrace)
		}
		if got := f.row(t, 2); !reflect.DeepEqual(got.AfterKeys, store.Strings{"k0", "r3"}) {
			t.Fatalf("repointed row waits on %v", got.AfterKeys)
		}
	})
}

// TestSeal: sealing stores the request, points the round at it with its size and history count
// and marks the rows it delivers (never the round itself); a guard that does not hold points
// nothing, and the stored request reads back as sealed.
func TestSeal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		row, result := f.rows[1].ID, f.rows[0].ID
		parts := store.SealedParts{Prefix: []byte(`{"entries":[`), Entries: [][]byte{[]byte(`{"role":"user"}`)}, Suffix: []byte(`]}`)}
		for name, fence := range f.fenceGuards() {
			f.refused(t, 1, name, func(tx *store.Tx) (bool, error) {
				_, ok, err := store.Seal{ID: row, Generation: 3, Parts: parts, At: 10, From: "running", Claim: &fence}.Exec(ctx, tx)
				return ok, err
			})
		}
		var id int64
		f.took(t, "seal", func(tx *store.Tx) (bool, error) {
			var ok bool
			var err error
			id, ok, err = store.Seal{ID: row, Generation: 3, Parts: parts, At: 10, HistoryEntries: 3,
				Delivered: store.Delivered{IDs: []int64{result, row}, With: "k1"}, From: "running", Claim: &f.fence}.Exec(ctx, tx)
			return ok, err
		})
		got := f.row(t, 1)
		if deref(got.SealedRequestID) != id || deref(got.RequestBytes) != int64(len(parts.Bytes())) || deref(got.HistoryEntries) != 3 {
			t.Fatalf("sealed row: request %v (want %d), bytes %v, history %v", got.SealedRequestID, id, got.RequestBytes, got.HistoryEntries)
		}
		if got.ResultDeliveredAt != nil || got.DeliveredWith != nil {
			t.Fatalf("the sealed row marked delivered: %v %v", got.ResultDeliveredAt, got.DeliveredWith)
		}
		if d := f.row(t, 0); deref(d.ResultDeliveredAt) != 10 || deref(d.DeliveredWith) != "k1" {
			t.Fatalf("the delivered row: %+v", d.TaskTrace)
		}
		back, err := store.SealedRequest(ctx, s.Reader(), id)
		if err != nil || string(back.Bytes()) != string(parts.Bytes()) {
			t.Fatalf("read back %q, %v", back.Bytes(), err)
		}
	})
}

// TestRunTransitions: each run statement writes its columns and nothing else it does not name.
func TestRunTransitions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newTransitionFixture(t, s)
		id := f.run.ID
		read := func() store.Run {
			r, err := store.RunByID(ctx, s.Reader(), id)
			if err != nil {
				t.Fatal(err)
			}
			return *r
		}
		step := func(name string, exec func(tx *store.Tx) error, change func(r *store.Run)) {
			t.Helper()
			want := read()
			change(&want)
			f.write(t, exec)
			if got := read(); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s\ngot  %+v\nwant %+v", name, got, want)
			}
		}
		step("start", func(tx *store.Tx) error { return store.StartRun{ID: id, Status: "running", At: 100}.Exec(ctx, tx) },
			func(r *store.Run) { r.Status, r.StartedAt, r.UpdatedAt = "running", ptr(int64(100)), 100 })
		step("revise", func(tx *store.Tx) error {
			return store.ReviseRun{ID: id, Revision: 2, Deliverable: "k2", At: 101}.Exec(ctx, tx)
		}, func(r *store.Run) { r.Revision, r.DeliverableTaskKey, r.UpdatedAt = 2, "k2", 101 })
		step("move", func(tx *store.Tx) error {
			return store.MoveRun{ID: id, Status: "needs_attention", At: 102}.Exec(ctx, tx)
		},
			func(r *store.Run) { r.Status, r.UpdatedAt = "needs_attention", 102 })
		step("revise and resume", func(tx *store.Tx) error {
			return store.ReviseRun{ID: id, Revision: 3, Deliverable: "k3", Status: "running", At: 103}.Exec(ctx, tx)
		}, func(r *store.Run) { r.Revision, r.DeliverableTaskKey, r.Status, r.UpdatedAt = 3, "k3", "running", 103 })
		step("plant a round", func(tx *store.Tx) error { return store.PlantRound{ID: id, Counter: 4, Deliverable: "r4"}.Exec(ctx, tx) },
			func(r *store.Run) { r.MainlineRoundCounter, r.DeliverableTaskKey = 4, "r4" })
		step("request a stop", func(tx *store.Tx) error {
			return store.RequestStop{ID: id, At: 104, By: store.Member{Kind: "user", PublicID: "u"}, Force: true}.Exec(ctx, tx)
		}, func(r *store.Run) {
			r.StopRequestedAt, r.StopByKind, r.StopByPublicID, r.StopForce = ptr(int64(104)), ptr("user"), ptr("u"), ptr(true)
		})
		f.write(t, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE tasks SET output = 'the answer' WHERE id = ?`, f.rows[2].ID)
			return err
		})
		step("complete", func(tx *store.Tx) error {
			return store.CompleteRun{ID: id, Status: "completed", Deliverable: f.rows[2].ID, At: 105}.Exec(ctx, tx)
		}, func(r *store.Run) {
			r.Status, r.Answer, r.UpdatedAt, r.CompletedAt = "completed", ptr("the answer"), 105, ptr(int64(105))
		})
		step("move and end", func(tx *store.Tx) error {
			return store.MoveRun{ID: id, Status: "canceled", At: 106, CompletedAt: ptr(int64(106))}.Exec(ctx, tx)
		}, func(r *store.Run) { r.Status, r.UpdatedAt, r.CompletedAt = "canceled", 106, ptr(int64(106)) })
		// A deliverable without output answers the empty text.
		step("complete without output", func(tx *store.Tx) error {
			return store.CompleteRun{ID: id, Status: "completed", Deliverable: f.rows[0].ID, At: 107}.Exec(ctx, tx)
		}, func(r *store.Run) {
			r.Status, r.Answer, r.UpdatedAt, r.CompletedAt = "completed", ptr(""), 107, ptr(int64(107))
		})
	})
}
