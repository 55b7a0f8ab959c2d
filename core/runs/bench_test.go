package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/kernel"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func percentiles(b *testing.B, ds []time.Duration, prefix string) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	if len(ds) == 0 {
		return
	}
	p := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) }
	b.ReportMetric(p(0.5), prefix+"p50-µs")
	b.ReportMetric(p(0.99), prefix+"p99-µs")
}

type notifySink chan time.Time

func (s notifySink) Notified(string) { s <- time.Now() }
func (s notifySink) Live()           {}
func (s notifySink) Lost()           {}

// benchEngine builds an engine over s; onClaim observes every claim.
func benchEngine(b *testing.B, s *store.Store, workers int, onClaim func(*store.Claimed)) (*runs.Engine, *runs.Actor) {
	b.Helper()
	reg := registry.New()
	comp, err := declare.New(reg)
	if err != nil {
		b.Fatal(err)
	}
	models := model.MustBuiltin()
	tools := kernel.New(kernel.Options{
		Memory: &kernel.Memory{Provider: kmemory.New(s), Scopes: kernel.MemoryScopes{Resolver: kmemory.NewResolver(s, conversations.ConversationStates{})}},
		Models: &kernel.Models{Catalog: models},
	})
	e, err := runs.New(runs.Options{Store: s, Conversations: conversations.Hosted{}, Models: models, Registry: reg, Compiler: comp, Kernel: tools,
		Config: runs.Config{Workers: workers}, OnClaim: onClaim})
	if err != nil {
		b.Fatal(err)
	}
	return e, benchActor(b, s)
}

func benchActor(b *testing.B, s *store.Store) *runs.Actor {
	ctx := context.Background()
	var a *runs.Actor
	err := s.Write(ctx, func(tx *store.Tx) error {
		w, err := store.WorkspaceByHandle(ctx, tx, "default")
		if err == nil {
			var u store.User
			if err := tx.Get(ctx, &u, `SELECT id, public_id, handle, display_name, created_at FROM users WHERE handle = 'ana'`); err != nil {
				return err
			}
			a = &runs.Actor{Kind: "user", ID: u.ID, PublicID: u.PublicID, Role: store.RoleOwner, WorkspaceID: w.ID, WorkspacePublicID: w.PublicID}
			return nil
		}
		u := &store.User{PublicID: store.NewPublicID(), Handle: "ana", DisplayName: "Ana"}
		ws := &store.Workspace{PublicID: store.NewPublicID(), Handle: "default", Name: "Default"}
		if err := store.InsertUser(ctx, tx, u); err != nil {
			return err
		}
		if err := store.InsertWorkspace(ctx, tx, ws); err != nil {
			return err
		}
		a = &runs.Actor{Kind: "user", ID: u.ID, PublicID: u.PublicID, Role: store.RoleOwner, WorkspaceID: ws.ID, WorkspacePublicID: ws.PublicID}
		return store.InsertMembership(ctx, tx, ws.ID, u.ID, store.RoleOwner, 0)
	})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkB8Wakeup measures, on PostgreSQL, the time from the commit that makes a kernel task
// runnable to a worker claiming it: on the creating instance (in-process notifier) and on
// another instance sharing the database (LISTEN/NOTIFY), beside a bare LISTEN/NOTIFY round trip
// measured in the same run. Workers poll only every 2 s, so a latency in milliseconds is a
// wake-up, never the poll.
func BenchmarkB8Wakeup(b *testing.B) {
	if storetest.PostgresURL() == "" {
		b.Skip(storetest.PostgresEnv + " is not set: B8 measures PostgreSQL")
	}
	ctx := context.Background()
	b.Run("bare-listen-notify", func(b *testing.B) {
		s := storetest.Open(b, store.Postgres)
		sink := make(notifySink, 1)
		stop, err := s.Subscribe(ctx, s.Channel("bench"), sink)
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		ds := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// The round trip: from opening the notifying transaction to the listener's receipt.
			sent := time.Now()
			err := s.Write(ctx, func(tx *store.Tx) error { return store.Notify(ctx, tx, s.Channel("bench"), "x") })
			if err != nil {
				b.Fatal(err)
			}
			got := <-sink
			ds = append(ds, got.Sub(sent))
		}
		b.StopTimer()
		percentiles(b, ds, "")
	})
	measure := func(b *testing.B, crossInstance bool) {
		s := storetest.Open(b, store.Postgres)
		claimed := make(chan time.Time, 16)
		worker, actor := benchEngine(b, s, runs.DefaultWorkers, func(c *store.Claimed) {
			if c.Kind == runs.KindModel {
				claimed <- time.Now()
			}
		})
		creator := worker
		if crossInstance {
			// Another instance on the same database creates the runs; it runs no workers, so only
			// its NOTIFY can wake the worker instance.
			var err error
			creator, err = runs.New(runs.Options{Store: s, Conversations: conversations.Hosted{}, Models: model.MustBuiltin(), Registry: registry.New(), Texts: kernel.New(kernel.Options{}), Config: runs.Config{Workers: 1}})
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := worker.Start(ctx); err != nil {
			b.Fatal(err)
		}
		defer worker.Stop()
		time.Sleep(50 * time.Millisecond) // the workers' first poll finds nothing
		run := json.RawMessage(`{"steps":[{"model":{"model":"mock/scripted","prompt":"hi"}}],"approval_mode":"bypass"}`)
		ds := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c, err := conversations.NewDoors(creator, nil).CreateRun(ctx, createRequest(actor, run, "", nil))
			if err != nil {
				b.Fatal(err)
			}
			committed := time.Now()
			select {
			case got := <-claimed:
				ds = append(ds, got.Sub(committed))
			case <-time.After(10 * time.Second):
				b.Fatal("no worker claimed the round")
			}
			// Let the round finish before the next commit, so each sample starts from an idle
			// pool, as a wake-up does.
			b.StopTimer()
			for {
				r, err := conversations.NewDoors(worker, nil).ReadRun(ctx, actor, c.Run.PublicID)
				if err != nil {
					b.Fatal(err)
				}
				if r.Status == runs.RunCompleted {
					break
				}
				time.Sleep(200 * time.Microsecond)
			}
			b.StartTimer()
		}
		b.StopTimer()
		percentiles(b, ds, "")
	}
	b.Run("same-instance", func(b *testing.B) { measure(b, false) })
	b.Run("cross-instance", func(b *testing.B) { measure(b, true) })
}

// threeRounds is a three-round mock run with ten memory calls per round, then its answer.
var threeRounds = func() string {
	var sb strings.Builder
	sb.WriteString("Throughput.\n!mock\n")
	for r := 1; r <= 3; r++ {
		fmt.Fprintf(&sb, "round %d\n", r)
		for i := 0; i < 10; i++ {
			if i%2 == 0 {
				fmt.Fprintf(&sb, "call memory_write {\"path\":\"workspace/r%d-%d.md\",\"content\":\"x\"}\n", r, i)
			} else {
				fmt.Fprintf(&sb, "call memory_ls {\"path\":\"workspace/r%d\"}\n", r)
			}
		}
	}
	sb.WriteString("round 4\nsay done")
	return sb.String()
}()

// memoryRun is a run body of one mock model step that follows script with the memory tools.
func memoryRun(script string) json.RawMessage {
	p, _ := json.Marshal(script)
	return json.RawMessage(`{"steps":[{"model":{"model":"mock/scripted","prompt":` + string(p) + `,` + memoryTools + `}}],"approval_mode":"bypass"}`)
}

// BenchmarkRunsPerSecond measures whole runs per second: each run has three rounds of ten
// memory calls (31 kernel tool and model evaluations, 34 rows) on the default worker pool.
func BenchmarkRunsPerSecond(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			s := storetest.Open(b, d)
			e, actor := benchEngine(b, s, runs.DefaultWorkers, nil)
			if err := e.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer e.Stop()
			run := memoryRun(threeRounds)
			const parallel = 8 // concurrent runs in flight, as several conversations would be
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			sem := make(chan struct{}, parallel)
			for i := 0; i < b.N; i++ {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					c, err := conversations.NewDoors(e, nil).CreateRun(ctx, createRequest(actor, run, "", nil))
					if err != nil {
						b.Error(err)
						return
					}
					for {
						// Polling reads cost the store too; every 20 ms keeps them a small share.
						time.Sleep(20 * time.Millisecond)
						r, err := conversations.NewDoors(e, nil).ReadRun(ctx, actor, c.Run.PublicID)
						if err != nil {
							b.Error(err)
							return
						}
						if r.Status == runs.RunCompleted {
							return
						}
						if r.Status != runs.RunRunning {
							b.Errorf("run %s", r.Status)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
		})
	}
}

// BenchmarkBacklog measures how fast a backlog drains: b.N runs of one round with one memory
// call, created at once while the engine is stopped, then drained by the default worker pool
// from its start to the last run's completion. It reports runs a second per store; the goal on
// SQLite is at least half PostgreSQL's rate in the same run (docs/development.md#where-the-time-goes).
func BenchmarkBacklog(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			s := storetest.Open(b, d)
			e, actor := benchEngine(b, s, runs.DefaultWorkers, nil)
			run := memoryRun("Note.\n!mock\nround 1\ncall memory_write {\"path\":\"workspace/backlog.md\",\"content\":\"x\"}\nround 2\nsay done")
			doors := conversations.NewDoors(e, nil)
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			for i := 0; i < b.N; i++ {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					if _, err := doors.CreateRun(ctx, createRequest(actor, run, "", nil)); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
			if b.Failed() {
				return
			}
			b.ResetTimer()
			start := time.Now()
			if err := e.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer e.Stop()
			for {
				var done int
				if err := s.Reader().Get(ctx, &done, `SELECT count(*) FROM runs WHERE status IN ('completed', 'needs_attention', 'canceled')`); err != nil {
					b.Fatal(err)
				}
				if done >= b.N {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			b.StopTimer()
			rate := float64(b.N) / time.Since(start).Seconds()
			b.ReportMetric(rate, "runs/s")
			b.Logf("backlog of %d runs on %s drained at %.1f runs/s", b.N, d, rate)
		})
	}
}
