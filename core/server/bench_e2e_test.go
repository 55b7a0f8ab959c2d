package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// endToEndScript is the mock's two rounds: one call of the runner's tool, then the answer.
const endToEndScript = "!mock\nround 1\ncall work {\"n\":1}\nround 2\nsay done"

// e2eWait is the member's wait on its run read (docs/api.md#waiting-for-a-run), the longest the
// server grants: one read that the server answers when the run leaves running, as a member
// waiting on a run reads it, instead of reads polled while the scheduler works.
const e2eWait = int(conversations.MaxRunWait / time.Second)

// oneToolRun is a standalone run of one model step that the mock answers with one call of the
// runner's tool, routed to the runner.
func (p *benchPlane) oneToolRun() map[string]any {
	tool := map[string]any{"type": "function",
		"function": map[string]any{"name": "work", "description": "Run work.", "parameters": map[string]any{"type": "object"}},
		"route":    map[string]any{"kind": "runner", "runner_executor_public_id": p.id, "tool_name": "work"}}
	return map[string]any{"approval_mode": "bypass", "steps": []any{map[string]any{"model": map[string]any{
		"model": "mock/scripted", "prompt": endToEndScript, "tools": []any{tool}}}}}
}

// answers are the real answers of one end-to-end run, which the bare handlers send back.
type answers struct {
	created, claim, commit, read json.RawMessage
	key                          string
}

// e2eLegs are the legs of end-to-end runs, summed: the create, from its answer to the runner's
// work_available (the mock's round), the claim, the commit, and from the commit's answer to the
// read that finds the run completed (the continuation).
type e2eLegs struct {
	create, round, claim, commit, completed time.Duration
}

// endToEnd drives one run through the server: create it, hear the runner's work_available for
// it, claim and commit the call, and read the run until it is completed. It reports the reads,
// and adds the run's legs to legs when it is not nil.
func (p *benchPlane) endToEnd(ctx context.Context, body json.RawMessage, stream *client.EventStream, keep *answers, legs *e2eLegs) (int, error) {
	if legs == nil {
		legs = &e2eLegs{}
	}
	mark := time.Now()
	leg := func(d *time.Duration) {
		now := time.Now()
		*d += now.Sub(mark)
		mark = now
	}
	created, err := p.admin.CreateRun(ctx, "default", body, "")
	if err != nil {
		return 0, err
	}
	leg(&legs.create)
	run := created.Run.PublicID
	var key string
	for key == "" {
		ev, err := stream.Next()
		if err != nil {
			return 0, err
		}
		if ev.Type == "work_available" && ev.RunPublicID == run {
			key = ev.TaskKey
		}
	}
	leg(&legs.round)
	cl, err := p.runner.ClaimWork(ctx, run, key)
	if err != nil {
		return 0, err
	}
	leg(&legs.claim)
	res, err := p.runner.Commit(ctx, run, key, cl.Claim.ClaimToken, &client.Result{Content: "done"})
	if err != nil {
		return 0, err
	}
	leg(&legs.commit)
	if !res.Applied {
		return 0, fmt.Errorf("commit of %s not applied", run)
	}
	for reads := 1; ; reads++ {
		got, err := p.admin.WaitRun(ctx, "default", run, e2eWait)
		if err != nil {
			return reads, err
		}
		if got.Run.Status == "completed" {
			leg(&legs.completed)
			if keep != nil {
				*keep = answers{created: created.Raw, claim: cl.Raw, commit: res.Raw, read: got.Raw, key: key}
			}
			return reads, nil
		}
	}
}

// bareServer answers the four requests of an end-to-end run with recorded bytes and does
// nothing else: the HTTP share of the baseline.
func bareServer(b testing.TB, a answers) *httptest.Server {
	b.Helper()
	mux := http.NewServeMux()
	reply := func(status int, body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(status)
			_, _ = w.Write(body)
			_, _ = w.Write([]byte("\n"))
		}
	}
	mux.HandleFunc("POST /agent_api/v1/workspaces/{ws}/runs", reply(http.StatusCreated, a.created))
	mux.HandleFunc("POST /agent_api/v1/executor/inbox/{run}/{key}/claim", reply(http.StatusOK, a.claim))
	mux.HandleFunc("POST /agent_api/v1/executor/inbox/{run}/{key}/commit", reply(http.StatusOK, a.commit))
	mux.HandleFunc("GET /agent_api/v1/workspaces/{ws}/runs/{run}", reply(http.StatusOK, a.read))
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	return srv
}

// bareHTTP sends the same four requests, with the same clients' encoding and decoding, to the
// bare handlers.
func bareHTTP(ctx context.Context, member, runner *client.Client, body json.RawMessage, a answers) error {
	created, err := member.CreateRun(ctx, "default", body, "")
	if err != nil {
		return err
	}
	run := created.Run.PublicID
	cl, err := runner.ClaimWork(ctx, run, a.key)
	if err != nil {
		return err
	}
	if _, err := runner.Commit(ctx, run, a.key, cl.Claim.ClaimToken, &client.Result{Content: "done"}); err != nil {
		return err
	}
	_, err = member.WaitRun(ctx, "default", run, e2eWait)
	return err
}

// rawRun is the SQL of one end-to-end run, written out and run directly: the run and its model
// task inserted, the model task claimed, sealed and settled with its call's tool row and the
// continuation, the tool row claimed by the runner and committed (the continuation made
// runnable), the continuation claimed, sealed and settled with the run, and the run read.
type rawRun struct {
	st                *store.Store
	run               store.Run
	model, tool, cont store.Task
	sealed            store.SealedParts
	executor          string
}

func newRawRun(b testing.TB, st *store.Store, publicID, executor string) *rawRun {
	b.Helper()
	run, tasks := readRun(b, st, publicID)
	if len(tasks) != 3 {
		b.Fatalf("the template run has %d rows, want the model task, the tool row and the continuation", len(tasks))
	}
	r := &rawRun{st: st, run: *run, model: tasks[0], tool: tasks[1], cont: tasks[2], executor: executor}
	if r.model.Kind != "model_task" || r.tool.Kind != "tool_task" || r.cont.Kind != "model_task" || r.model.SealedRequestID == nil {
		b.Fatalf("template rows %s/%s/%s", r.model.Kind, r.tool.Kind, r.cont.Kind)
	}
	sealed, err := store.SealedRequest(context.Background(), st.Reader(), *r.model.SealedRequestID)
	if err != nil {
		b.Fatal(err)
	}
	r.sealed = sealed
	for _, t := range []*store.Task{&r.model, &r.tool, &r.cont} {
		t.ClaimTokenHash, t.ClaimedBy, t.ClaimedAt, t.SealedRequestID, t.ClaimGeneration = nil, nil, nil, nil, 0
	}
	// The copies are lowered, a flag the server's own scheduler passes over, so that only this
	// baseline claims them; the claims below name the same conditions with it set.
	r.run.Status = "running"
	r.model.Status, r.tool.Status, r.cont.Status = "running", "dispatched", "waiting"
	r.model.Lowered, r.tool.Lowered, r.cont.Lowered = true, true, true
	r.tool.AddressedExecutorPublicID = nil
	return r
}

func (r *rawRun) once(ctx context.Context) error {
	now := time.Now().UnixMilli()
	run, model := r.run, r.model
	run.PublicID = store.NewPublicID()
	err := r.st.Write(ctx, func(tx *store.Tx) error {
		if err := store.InsertRun(ctx, tx, &run); err != nil {
			return err
		}
		model.RunID = run.ID
		return store.InsertTask(ctx, tx, &model)
	})
	if err != nil {
		return err
	}
	if err := r.claim(ctx, rawModelRunnable, model.ID, store.KernelClaimant, now); err != nil {
		return err
	}
	tool, cont := r.tool, r.cont
	tool.RunID, cont.RunID = run.ID, run.ID
	err = r.st.Write(ctx, func(tx *store.Tx) error {
		if err := r.settleModel(ctx, tx, model.ID, now); err != nil {
			return err
		}
		if err := store.InsertTask(ctx, tx, &tool); err != nil {
			return err
		}
		return store.InsertTask(ctx, tx, &cont)
	})
	if err != nil {
		return err
	}
	if err := r.claim(ctx, rawToolRunnable, tool.ID, store.ExecutorClaimant(r.executor), now); err != nil {
		return err
	}
	err = r.st.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE tasks SET status = 'completed', output = 'done', content = '[{"type":"text","text":"done"}]', is_error = ?, completed_at = ? WHERE id = ? AND status = 'dispatched'`, false, now, tool.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE tasks SET status = 'running' WHERE id = ? AND status = 'waiting'`, cont.ID)
		return err
	})
	if err != nil {
		return err
	}
	if err := r.claim(ctx, rawModelRunnable, cont.ID, store.KernelClaimant, now); err != nil {
		return err
	}
	err = r.st.Write(ctx, func(tx *store.Tx) error {
		if err := r.settleModel(ctx, tx, cont.ID, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE runs SET status = 'completed', completed_at = ? WHERE id = ?`, now, run.ID)
		return err
	})
	if err != nil {
		return err
	}
	_, err = store.RunByPublicID(ctx, r.st.Reader(), run.WorkspaceID, run.PublicID)
	return err
}

// The baseline's claim conditions: the kernel's and an executor's runnable rows, with the row
// named, as the scheduler and the claim door name theirs.
const (
	rawModelRunnable = `t.status = 'running' AND t.claimed_at IS NULL AND t.lowered = ? AND r.status = 'running' AND t.kind = 'model_task' AND t.id = ?`
	rawToolRunnable  = `t.status = 'dispatched' AND t.claimed_at IS NULL AND t.lowered = ? AND t.addressed_executor_public_id IS NULL AND t.id = ?`
)

// e2eRound is how many runs one side of B12 makes before the other: a run takes some
// milliseconds, so rounds this short alternate the sides many times in a second, and a change
// in the machine's load falls on both.
const e2eRound = 25

// rawClaimTimeout is the clock of the baseline's claims, as the kernel's model timeout is of its
// own: a claim without one would be past its deadline at once, and the server's sweeper would
// lock the baseline's rows and settle them by the expiry rule while the baseline writes them.
const rawClaimTimeout = 10 * time.Minute

func (r *rawRun) claim(ctx context.Context, predicate string, id int64, by store.Claimant, now int64) error {
	return r.st.Write(ctx, func(tx *store.Tx) error {
		got, _, err := rawClaim(ctx, tx, predicate, []any{true, id}, by, now, rawClaimTimeout.Milliseconds())
		if err == nil && got != id {
			err = fmt.Errorf("raw claim of task %d took row %d", id, got)
		}
		return err
	})
}

// rawClaim is the claim primitive's two statements (store.Claim of one row) written out, as the
// baselines run them: a runnable row selected under its lock (SKIP LOCKED on PostgreSQL) by cond,
// a condition over `t` and `r` with its arguments, then taken with a new generation, a token's
// hash, its claimant and a restarted clock. It answers the row and its token's hash; 0 when no
// row is runnable.
func rawClaim(ctx context.Context, tx *store.Tx, cond string, args []any, by store.Claimant, now, timeoutMS int64) (int64, []byte, error) {
	q := `SELECT t.id, t.run_id, t.task_key, t.kind FROM tasks t JOIN runs r ON r.id = t.run_id WHERE ` + cond + ` ORDER BY t.dispatched_at, t.id LIMIT ?`
	if tx.Dialect() == store.Postgres {
		q += ` FOR UPDATE OF t SKIP LOCKED`
	}
	var rows []struct {
		store.TaskRef
		Kind string `db:"kind"`
	}
	if err := tx.Select(ctx, &rows, q, append(args, 1)...); err != nil || len(rows) == 0 {
		return 0, nil, err
	}
	tok, err := store.NewClaimToken()
	if err != nil {
		return 0, nil, err
	}
	hash := store.HashClaimToken(tok)
	var out struct {
		Generation int64 `db:"claim_generation"`
		Deadline   int64 `db:"deadline_at"`
	}
	err = tx.Get(ctx, &out, `UPDATE tasks SET
  claim_generation = claim_generation + 1,
  claim_token_hash = ?,
  claimed_by = ?,
  claimed_instance = ?,
  claimed_at = ?,
  started_at = COALESCE(started_at, ?),
  deadline_at = ? + COALESCE(timeout_ms, ?),
  attempts = attempts + CASE WHEN kind = ? THEN 1 ELSE 0 END
WHERE id = ? RETURNING claim_generation, deadline_at`, hash, by, nil, now, now, now, timeoutMS, "", rows[0].ID)
	return rows[0].ID, hash, err
}

// settleModel seals the round and settles it with the statements the server seals with
// (store.Seal): each piece of the request stored once, then the request's index row and the
// round's update, one statement on PostgreSQL, here with the settle's columns in it.
func (r *rawRun) settleModel(ctx context.Context, tx *store.Tx, id, now int64) error {
	put := func(b []byte) (string, error) {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		_, err := tx.Exec(ctx, `INSERT INTO sealed_entries (sha256, body, byte_size) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING`, h, string(b), len(b))
		return h, err
	}
	var idx struct {
		Prefix  string   `json:"prefix"`
		Entries []string `json:"entries"`
		Suffix  string   `json:"suffix"`
	}
	var err error
	if idx.Prefix, err = put(r.sealed.Prefix); err != nil {
		return err
	}
	if idx.Suffix, err = put(r.sealed.Suffix); err != nil {
		return err
	}
	for _, e := range r.sealed.Entries {
		h, err := put(e)
		if err != nil {
			return err
		}
		idx.Entries = append(idx.Entries, h)
	}
	parts, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	whole := r.sealed.Bytes()
	sum := sha256.Sum256(whole)
	args := []any{id, 1, string(parts), hex.EncodeToString(sum[:]), len(whole), now}
	const insert = `INSERT INTO sealed_requests (task_id, generation_sealed, parts, sha256, byte_size, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	const settle = `status = 'completed', output = 'done', completed_at = ? WHERE id = ?`
	var sealed int64
	if tx.Dialect() == store.Postgres {
		return tx.Get(ctx, &sealed, `WITH sealed AS (`+insert+` RETURNING id)
UPDATE tasks SET sealed_request_id = (SELECT id FROM sealed), request_bytes = ?, `+settle+` RETURNING sealed_request_id`,
			append(args, len(whole), now, id)...)
	}
	if err := tx.Get(ctx, &sealed, insert+` RETURNING id`, args...); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE tasks SET sealed_request_id = ?, request_bytes = ?, `+settle, sealed, len(whole), now, id)
	return err
}

// BenchmarkEndToEnd is B12: one run through a runner end to end over HTTP (the create, the
// mock's round, the runner's claim and commit, the continuation, the run read at completed)
// against the sum of the same four HTTP requests answered by bare handlers and the SQL of the
// same run written out and run directly, measured in alternating rounds (e2eRound), one client,
// b.N runs of each. The parent logs the ratio (goal at most 2x).
func BenchmarkEndToEnd(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			p := newBenchPlane(b, d)
			ctx := context.Background()
			stream, err := p.runner.Events(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer stream.Close()
			body, _ := json.Marshal(p.oneToolRun())
			var rec answers
			if _, err := p.endToEnd(ctx, body, stream, &rec, nil); err != nil {
				b.Fatal(err)
			}
			var created struct {
				Run struct {
					PublicID string `json:"public_id"`
				} `json:"run"`
			}
			if err := json.Unmarshal(rec.created, &created); err != nil {
				b.Fatal(err)
			}
			raw := newRawRun(b, p.st, created.Run.PublicID, p.id)
			bare := bareServer(b, rec)
			member, runner := client.New(bare.URL, "member"), client.New(bare.URL, "runner")
			var reads, runs int
			var e2eRate, baseRate float64
			var legs e2eLegs
			b.Run("runs", func(b *testing.B) {
				reads, runs, legs = 0, b.N, e2eLegs{}
				var e2eTime, baseTime time.Duration
				for done, analyzeAt := 0, 0; done < b.N; done += e2eRound {
					m := min(e2eRound, b.N-done)
					// The runs of each side add rows to tables that began nearly empty: the
					// statistics are refreshed each time the tables have about doubled, then
					// every pairedRound runs, as autovacuum's analyze does in service, so that
					// neither side is measured on plans made for empty tables.
					if done >= analyzeAt {
						analyzeAt = max(e2eRound, min(2*done, done+pairedRound))
						b.StopTimer()
						p.analyze(b)
						b.StartTimer()
					}
					e2eTime += timed(b, 1, m, func(int) error {
						n, err := p.endToEnd(ctx, body, stream, nil, &legs)
						reads += n
						return err
					})
					baseTime += timed(b, 1, m, func(int) error {
						if err := bareHTTP(ctx, member, runner, body, rec); err != nil {
							return err
						}
						return raw.once(ctx)
					})
				}
				e2eRate, baseRate = float64(b.N)/e2eTime.Seconds(), float64(b.N)/baseTime.Seconds()
				b.ReportMetric(e2eRate, "e2e-runs/s")
				b.ReportMetric(baseRate, "base-runs/s")
				b.ReportMetric(baseRate/e2eRate, "x-base")
				b.ReportMetric(float64(reads)/float64(b.N), "reads/run")
			})
			if e2eRate > 0 {
				per := func(d time.Duration) time.Duration { return (d / time.Duration(runs)).Round(10 * time.Microsecond) }
				b.Logf("B12 end to end (%s): a run %v, the bare requests plus its SQL %v (%.2fx, goal <= 2); %.1f run reads per run; legs: create %v, round to work_available %v, claim %v, commit %v, commit to completed %v",
					d, time.Duration(float64(time.Second)/e2eRate), time.Duration(float64(time.Second)/baseRate), baseRate/e2eRate, float64(reads)/float64(runs),
					per(legs.create), per(legs.round), per(legs.claim), per(legs.commit), per(legs.completed))
			}
		})
	}
}
