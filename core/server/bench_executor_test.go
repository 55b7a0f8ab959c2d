package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
)

// benchPlane is one server with a runner announcing one tool, for the executor plane's
// benchmarks (B6, B7, B8, B9).
type benchPlane struct {
	srv    *testserver.Instance
	admin  *client.Client
	runner *client.Client
	id     string
	st     *store.Store
}

func newBenchPlane(b testing.TB, d store.Dialect) *benchPlane {
	b.Helper()
	srv := testserver.Start(b, testserver.Options{Dialect: d, LogLevel: hclog.Info})
	id, tok := newRunner(b, srv, "bench")
	r := srv.ClientWith(tok)
	destructive := false
	if _, err := r.Announce(context.Background(), announce.Announcement{Tools: []announce.Tool{{Name: "work",
		EffectProfile: &announce.AnnouncedProfile{Kind: "read_only", Destructive: &destructive, EffectScope: "closed", Idempotency: "intrinsic", Reconciliation: "none"}}}}); err != nil {
		b.Fatal(err)
	}
	return &benchPlane{srv: srv, admin: srv.Client(), runner: r, id: id, st: srv.Server().Store()}
}

// oneStep is a standalone run of one tool step routed to the runner: one enqueued task.
func (p *benchPlane) oneStep() map[string]any {
	return map[string]any{"approval_mode": "bypass", "steps": []any{map[string]any{"tool": map[string]any{
		"name": "work", "input": map[string]any{"n": 1}, "route": map[string]any{"kind": "runner", "runner_executor_public_id": p.id}}}}}
}

// template creates one real run through the door and reads back its run and task rows, which the
// benchmarks clone with fresh ids so that their setup costs one batch insert per thousand rows.
func (p *benchPlane) template(b testing.TB, steps map[string]any) (*store.Run, []store.Task) {
	b.Helper()
	ctx := context.Background()
	created, err := p.admin.CreateRun(ctx, "default", steps, "")
	if err != nil {
		b.Fatal(err)
	}
	return readRun(b, p.st, created.Run.PublicID)
}

// readRun reads a run and its rows back, every column, in id order.
func readRun(tb testing.TB, st *store.Store, publicID string) (*store.Run, []store.Task) {
	tb.Helper()
	ctx := context.Background()
	var run *store.Run
	var tasks []store.Task
	err := st.Write(ctx, func(tx *store.Tx) error {
		var id int64
		if err := tx.Get(ctx, &id, `SELECT id FROM runs WHERE public_id = ?`, publicID); err != nil {
			return err
		}
		var err error
		if run, err = store.RunByID(ctx, tx, id); err != nil {
			return err
		}
		trace, err := store.TraceTasks(ctx, tx, id)
		if err != nil {
			return err
		}
		for _, t := range trace {
			full, err := store.TaskByID(ctx, tx, t.ID)
			if err != nil {
				return err
			}
			tasks = append(tasks, *full)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return run, tasks
}

// benchRows are cloned rows ready to claim.
type benchRow struct {
	run     string
	runID   int64
	taskIDs []int64
	keys    []string
}

// cloneBatch bounds the clones inserted in one transaction.
const cloneBatch = 500

// clone inserts n copies of the template run and its tasks, each run with a fresh public id.
func (p *benchPlane) clone(b testing.TB, run *store.Run, tasks []store.Task, n int) []benchRow {
	b.Helper()
	ctx := context.Background()
	out := make([]benchRow, 0, n)
	for start := 0; start < n; start += cloneBatch {
		err := p.st.Write(ctx, func(tx *store.Tx) error {
			for i := start; i < min(start+cloneBatch, n); i++ {
				r := *run
				r.PublicID = store.NewPublicID()
				if err := store.InsertRun(ctx, tx, &r); err != nil {
					return err
				}
				row := benchRow{run: r.PublicID, runID: r.ID}
				for _, t := range tasks {
					c := t
					c.RunID = r.ID
					if err := store.InsertTask(ctx, tx, &c); err != nil {
						return err
					}
					row.taskIDs = append(row.taskIDs, c.ID)
					row.keys = append(row.keys, c.Key)
				}
				out = append(out, row)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	p.analyze(b)
	return out
}

// analyze refreshes PostgreSQL's statistics after a bulk insert, as autovacuum does in service
// within a minute: without them the planner takes the freshly filled tables for empty ones and
// scans them, and a measurement would depend on whether autovacuum ran during it.
func (p *benchPlane) analyze(b testing.TB) {
	b.Helper()
	if p.st.Dialect() != store.Postgres {
		return
	}
	if _, err := p.st.DB().ExecContext(context.Background(), `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}

// throughput runs ops on workers goroutines and reports operations per second.
func throughput(b *testing.B, workers, n int, op func(i int) error) float64 {
	b.Helper()
	return float64(n) / timed(b, workers, n, op).Seconds()
}

// timed runs n ops on workers goroutines and reports how long they took.
func timed(b *testing.B, workers, n int, op func(i int) error) time.Duration {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	return elapsed
}

// pairedRound is how many operations one variant of a paired benchmark runs before the other
// takes its turn: some 100 to 300 ms each, long enough that a round's start and end (workers
// starting, the last ones finishing alone) weigh a few percent, short enough that both variants
// meet the same drift of the machine.
const pairedRound = 200

// paired measures two variants of one operation on workers goroutines, n operations each,
// alternating rounds of pairedRound, and reports each one's operations per second. Measured one
// after the other, a ratio inherits whatever the machine's throughput did between the two
// (on a shared virtual machine it drifts by a tenth over seconds); alternating, both see it.
func paired(b *testing.B, workers, n int, a, c func(i int) error) (float64, float64) {
	b.Helper()
	var ta, tc time.Duration
	for done := 0; done < n; done += pairedRound {
		m := min(pairedRound, n-done)
		ta += timed(b, workers, m, a)
		tc += timed(b, workers, m, c)
	}
	return float64(n) / ta.Seconds(), float64(n) / tc.Seconds()
}

// BenchmarkEnqueue is B6: a standalone run of one tool step created over HTTP (the run, its task,
// readiness, dispatch, the push signal) against a raw transaction inserting the same two rows,
// with 1, 4 and 16 clients, the two variants in alternating rounds (paired): b.N creates of each.
// Each logs how many creates were written by the run's one statement and how many of those
// found a guard failed and ran as a transaction (store.CreateRunStats). The parent logs the
// ratios (goal at least 0.7x).
func BenchmarkEnqueue(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			p := newBenchPlane(b, d)
			ctx := context.Background()
			run, tasks := p.template(b, p.oneStep())
			body, _ := json.Marshal(p.oneStep())
			overHTTP := func(int) error {
				_, err := p.admin.CreateRun(ctx, "default", json.RawMessage(body), "")
				return err
			}
			raw := func(int) error {
				return p.st.Write(ctx, func(tx *store.Tx) error {
					r := *run
					r.PublicID = store.NewPublicID()
					if err := store.InsertRun(ctx, tx, &r); err != nil {
						return err
					}
					t := tasks[0]
					t.RunID = r.ID
					return store.InsertTask(ctx, tx, &t)
				})
			}
			httpRate, rawRate := map[int]float64{}, map[int]float64{}
			for _, workers := range []int{1, 4, 16} {
				b.Run(fmt.Sprintf("clients/%d", workers), func(b *testing.B) {
					before := p.st.CreateRunStats()
					httpRate[workers], rawRate[workers] = paired(b, workers, b.N, overHTTP, raw)
					after := p.st.CreateRunStats()
					b.Logf("%d clients, %d creates: %d by the statement, %d guarded", workers, b.N, after.Written-before.Written, after.Guarded-before.Guarded)
					b.ReportMetric(httpRate[workers], "http-ops/s")
					b.ReportMetric(rawRate[workers], "raw-ops/s")
					b.ReportMetric(httpRate[workers]/rawRate[workers], "x-raw")
				})
			}
			if rawRate[1] > 0 && rawRate[4] > 0 && rawRate[16] > 0 {
				b.Logf("B6 enqueue (%s): 1 client http %.0f/s raw %.0f/s (%.2fx); 4 clients http %.0f/s raw %.0f/s (%.2fx); 16 clients http %.0f/s raw %.0f/s (%.2fx); goal >= 0.7x",
					d, httpRate[1], rawRate[1], httpRate[1]/rawRate[1], httpRate[4], rawRate[4], httpRate[4]/rawRate[4], httpRate[16], rawRate[16], httpRate[16]/rawRate[16])
			}
		})
	}
}

// BenchmarkClaimCommit is B7 on PostgreSQL and B9 on SQLite: runner goroutines claim and commit
// dispatched rows over HTTP (one run of one tool step per row, so that each commit also
// completes its run) against raw SQL doing the same two transactions: a SKIP LOCKED claim of the
// next row with a fresh token hash, then a fenced settle. The parent logs the ratios (goal at
// least 0.5x, and no drop from 4 to 16 goroutines).
func BenchmarkClaimCommit(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			p := newBenchPlane(b, d)
			ctx := context.Background()
			run, tasks := p.template(b, p.oneStep())
			rates := map[string]float64{}
			for _, workers := range []int{1, 4, 16} {
				name := fmt.Sprintf("http/%d", workers)
				b.Run(name, func(b *testing.B) {
					b.StopTimer()
					rows := p.clone(b, run, tasks, b.N)
					b.StartTimer()
					rates[name] = throughput(b, workers, b.N, func(i int) error {
						row := rows[i]
						cl, err := p.runner.ClaimWork(ctx, row.run, row.keys[0])
						if err != nil {
							return err
						}
						res, err := p.runner.Commit(ctx, row.run, row.keys[0], cl.Claim.ClaimToken, &client.Result{Content: "done"})
						if err == nil && !res.Applied {
							err = fmt.Errorf("commit of %s not applied", row.run)
						}
						return err
					})
					b.ReportMetric(rates[name], "ops/s")
				})
				raw := fmt.Sprintf("raw/%d", workers)
				b.Run(raw, func(b *testing.B) {
					b.StopTimer()
					p.clone(b, run, tasks, b.N)
					b.StartTimer()
					rates[raw] = throughput(b, workers, b.N, func(int) error { return rawClaimCommit(ctx, p.st, p.id) })
					b.ReportMetric(rates[raw], "ops/s")
				})
			}
			if rates["raw/16"] > 0 {
				bench := "B7"
				if d == store.SQLite {
					bench = "B9"
				}
				b.Logf("%s claim+commit (%s): 1: http %.0f/s raw %.0f/s (%.2fx); 4: http %.0f/s raw %.0f/s (%.2fx); 16: http %.0f/s raw %.0f/s (%.2fx); goal >= 0.5x, no drop 4 -> 16",
					bench, d, rates["http/1"], rates["raw/1"], rates["http/1"]/rates["raw/1"], rates["http/4"], rates["raw/4"], rates["http/4"]/rates["raw/4"],
					rates["http/16"], rates["raw/16"], rates["http/16"]/rates["raw/16"])
			}
		})
	}
}

// rawClaimCommit is B7's baseline: the claim as one SKIP LOCKED transaction, then the settle.
func rawClaimCommit(ctx context.Context, st *store.Store, executor string) error {
	tok, err := store.NewClaimToken()
	if err != nil {
		return err
	}
	hash := store.HashClaimToken(tok)
	now := time.Now().UnixMilli()
	var id int64
	err = st.Write(ctx, func(tx *store.Tx) error {
		var err error
		id, hash, err = rawClaim(ctx, tx, `t.status = 'dispatched' AND t.claimed_at IS NULL AND t.addressed_executor_public_id = ?`, []any{executor},
			store.ExecutorClaimant(executor), now, 0)
		if err != nil || id == 0 {
			return fmt.Errorf("raw claim: %v (row %d)", err, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return st.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE tasks SET status = 'completed', output = 'done', content = '[{"type":"text","text":"done"}]', is_error = ?, completed_at = ?
WHERE id = ? AND status = 'dispatched' AND claim_token_hash = ?`, false, now, id, hash)
		return err
	})
}

// listen opens a LISTEN connection of its own on the plane's database, subscribed to the scoped
// channel base until b ends, and answers the channel and what it hears.
func (p *benchPlane) listen(b *testing.B, base string) (string, signal) {
	b.Helper()
	ctx := context.Background()
	listener, err := store.Open(ctx, p.srv.DatabaseURL, store.Options{MaxReaders: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { listener.Close() })
	heard := make(signal, 1)
	channel := listener.Channel(base)
	stop, err := listener.Subscribe(ctx, channel, heard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return channel, heard
}

// notifyCommit is the floor of B8 and B22: b.N transactions, each updating a cloned task row and
// notifying channel with payload's text for its row, timed until heard hears it; it reports and
// answers their latencies.
func (p *benchPlane) notifyCommit(b *testing.B, run *store.Run, tasks []store.Task, channel string, heard signal, payload func(benchRow) string) latencies {
	b.Helper()
	ctx := context.Background()
	b.StopTimer()
	rows := p.clone(b, run, tasks, b.N)
	b.StartTimer()
	l := make(latencies, 0, b.N)
	for _, row := range rows {
		start := time.Now()
		err := p.st.Write(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE tasks SET status = 'completed', output = 'done', completed_at = ? WHERE id = ?`, start.UnixMilli(), row.taskIDs[0]); err != nil {
				return err
			}
			return store.Notify(ctx, tx, channel, payload(row))
		})
		if err != nil {
			b.Fatal(err)
		}
		<-heard
		l = append(l, time.Since(start))
	}
	b.ReportMetric(float64(l.quantile(0.5).Microseconds()), "p50-µs")
	return l
}

// BenchmarkCommitPush is B8's commit path on PostgreSQL: a runner commits the first of two
// chained tool steps over HTTP and the second, dispatched by that commit's readiness, arrives as
// work_available on its event stream; against a bare NOTIFY committed by a transaction that
// updates a task row, heard by a LISTEN connection. Latencies are per operation; the parent logs
// p50 and p99 and the ratio (goal p50 at most 2x).
func BenchmarkCommitPush(b *testing.B) {
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // NOTIFY is PostgreSQL's
		}
		b.Run(string(d), func(b *testing.B) {
			p := newBenchPlane(b, d)
			ctx := context.Background()
			two := map[string]any{"approval_mode": "bypass", "steps": []any{
				map[string]any{"tool": map[string]any{"key": "a", "name": "work", "route": map[string]any{"kind": "runner", "runner_executor_public_id": p.id}}},
				map[string]any{"tool": map[string]any{"key": "b", "name": "work", "route": map[string]any{"kind": "runner", "runner_executor_public_id": p.id}}},
			}}
			run, tasks := p.template(b, two)
			stream, err := p.runner.Events(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer stream.Close()
			results := map[string]latencies{}
			b.Run("commit-push", func(b *testing.B) {
				b.StopTimer()
				rows := p.clone(b, run, tasks, b.N)
				tokens := make([]string, b.N)
				for i, row := range rows {
					cl, err := p.runner.ClaimWork(ctx, row.run, "a")
					if err != nil {
						b.Fatal(err)
					}
					tokens[i] = cl.Claim.ClaimToken
				}
				b.StartTimer()
				l := make(latencies, 0, b.N)
				answered := make(latencies, 0, b.N)
				for i, row := range rows {
					start := time.Now()
					if _, err := p.runner.Commit(ctx, row.run, "a", tokens[i], &client.Result{Content: "done"}); err != nil {
						b.Fatal(err)
					}
					answered = append(answered, time.Since(start))
					for {
						ev, err := stream.Next()
						if err != nil {
							b.Fatal(err)
						}
						if ev.RunPublicID == row.run && ev.TaskKey == "b" {
							break
						}
					}
					l = append(l, time.Since(start))
				}
				results["commit-push"] = l
				results["commit-answer"] = answered
				b.ReportMetric(float64(l.quantile(0.5).Microseconds()), "p50-µs")
			})
			channel, heard := p.listen(b, "bench_commit_notify")
			b.Run("notify", func(b *testing.B) {
				l := make(latencies, 0, b.N)
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if err := p.st.NotifyNow(ctx, channel, `{"kind":"executor","task_key":"b","event":"work_available"}`); err != nil {
						b.Fatal(err)
					}
					<-heard
					l = append(l, time.Since(start))
				}
				results["notify"] = l
				b.ReportMetric(float64(l.quantile(0.5).Microseconds()), "p50-µs")
			})
			b.Run("notify-commit", func(b *testing.B) {
				results["notify-commit"] = p.notifyCommit(b, run, tasks, channel, heard, func(row benchRow) string {
					return `{"kind":"executor","run_public_id":"` + row.run + `","task_key":"b","event":"work_available"}`
				})
			})
			c, n, bare := results["commit-push"], results["notify-commit"], results["notify"]
			if len(c) > 0 && len(n) > 0 && len(bare) > 0 {
				a := results["commit-answer"]
				b.Logf("B8 commit to work_available (%d ops each): p50 commit-push %v (the commit's own answer %v), bare notify %v (%.2fx, goal <= 2), committed notify %v (%.2fx); p99 %v, %v, %v",
					len(c), c.quantile(0.5), a.quantile(0.5), bare.quantile(0.5), float64(c.quantile(0.5))/float64(bare.quantile(0.5)),
					n.quantile(0.5), float64(c.quantile(0.5))/float64(n.quantile(0.5)), c.quantile(0.99), bare.quantile(0.99), n.quantile(0.99))
			}
		})
	}
}
