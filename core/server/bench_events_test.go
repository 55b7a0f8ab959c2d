package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// settledOn reads a member stream on a goroutine and hands on each task.settled event's run.
func settledOn(b *testing.B, c *client.Client) <-chan string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.MemberEvents(ctx, "default", client.MemberEventOptions{})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	out := make(chan string, 4096)
	go func() {
		defer close(out)
		for {
			ev, err := s.Next()
			if err != nil {
				return
			}
			if ev.Type == client.MemberTaskSettled || ev.Type == client.MemberResync {
				out <- ev.RunPublicID
			}
		}
	}()
	b.Cleanup(func() { cancel(); s.Close() })
	return out
}

// awaitRun reads runs from ch until run arrives.
func awaitRun(b *testing.B, ch <-chan string, run string) {
	b.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got, ok := <-ch:
			if !ok {
				b.Fatal("the member stream ended")
			}
			if got == "" {
				b.Fatal("the member stream resynced: it fell behind")
			}
			if got == run {
				return
			}
		case <-timeout:
			b.Fatalf("no task.settled of %s within 30 s", run)
		}
	}
}

// BenchmarkMemberEvent is B22: a runner commits a claimed row over HTTP and the row's
// task.settled reaches a member stream on the same instance and, on PostgreSQL, on a second
// instance sharing the store, each measured from the commit's start; against a committed NOTIFY
// (a transaction that updates a task row and notifies, heard by a LISTEN connection) in the same
// run. On SQLite, which has no NOTIFY, against the commit's own answer. Goal: p50 at most 2x.
func BenchmarkMemberEvent(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			p := newBenchPlane(b, d)
			ctx := context.Background()
			run, tasks := p.template(b, p.oneStep())
			near := settledOn(b, p.admin)
			var far <-chan string
			if d == store.Postgres {
				two := testserver.Start(b, testserver.Options{Peer: p.srv, LogLevel: hclog.Info})
				far = settledOn(b, two.Client())
			}
			results := map[string]latencies{}
			b.Run("settle-event", func(b *testing.B) {
				b.StopTimer()
				rows := p.clone(b, run, tasks, b.N)
				tokens := make([]string, b.N)
				for i, row := range rows {
					cl, err := p.runner.ClaimWork(ctx, row.run, row.keys[0])
					if err != nil {
						b.Fatal(err)
					}
					tokens[i] = cl.Claim.ClaimToken
				}
				b.StartTimer()
				nearL, farL, answered := make(latencies, 0, b.N), make(latencies, 0, b.N), make(latencies, 0, b.N)
				for i, row := range rows {
					start := time.Now()
					if _, err := p.runner.Commit(ctx, row.run, row.keys[0], tokens[i], &client.Result{Content: "done"}); err != nil {
						b.Fatal(err)
					}
					answered = append(answered, time.Since(start))
					awaitRun(b, near, row.run)
					nearL = append(nearL, time.Since(start))
					if far != nil {
						awaitRun(b, far, row.run)
						farL = append(farL, time.Since(start))
					}
				}
				results["near"], results["far"], results["answer"] = nearL, farL, answered
				b.ReportMetric(float64(nearL.quantile(0.5).Microseconds()), "near-p50-µs")
			})
			if d != store.Postgres {
				n, a := results["near"], results["answer"]
				if len(n) > 0 {
					b.Logf("B22 settle to member event (%s, %d ops): p50 same instance %v against the commit's answer %v (%.2fx); p99 %v, %v",
						d, len(n), n.quantile(0.5), a.quantile(0.5), float64(n.quantile(0.5))/float64(a.quantile(0.5)), n.quantile(0.99), a.quantile(0.99))
				}
				return
			}
			channel, heard := p.listen(b, "bench_member_notify")
			b.Run("notify-commit", func(b *testing.B) {
				results["notify"] = p.notifyCommit(b, run, tasks, channel, heard, func(row benchRow) string {
					return `{"workspace_public_id":"w","run_public_id":"` + row.run + `","task_key":"s1-tool-1","status":"completed"}`
				})
			})
			n, f, base, a := results["near"], results["far"], results["notify"], results["answer"]
			if len(n) > 0 && len(base) > 0 {
				b.Logf("B22 settle to member event (%s, %d ops): p50 same instance %v (%.2fx), other instance %v (%.2fx), committed notify %v, the commit's answer %v; p99 %v, %v, %v; goal <= 2x",
					d, len(n), n.quantile(0.5), float64(n.quantile(0.5))/float64(base.quantile(0.5)), f.quantile(0.5), float64(f.quantile(0.5))/float64(base.quantile(0.5)),
					base.quantile(0.5), a.quantile(0.5), n.quantile(0.99), f.quantile(0.99), base.quantile(0.99))
			}
		})
	}
}
