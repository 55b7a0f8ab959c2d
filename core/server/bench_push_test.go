package server_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// latencies collects one variant's round trips.
type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := append(latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1))]
}

// signal is a store subscription that reports each notification on a channel.
type signal chan string

func (s signal) Notified(p string) { s <- p }
func (s signal) Live()             {}
func (s signal) Lost()             {}

// bareNotify answers B8's floor: one bare NOTIFY, the size of an executor wake-up for
// executorID, from a pool connection of one store heard by the LISTEN connection of another,
// on the database at url; the stores close when b ends.
func bareNotify(b *testing.B, url, executorID string) func() (time.Duration, error) {
	b.Helper()
	ctx := context.Background()
	sender, err := store.Open(ctx, url, store.Options{MaxReaders: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sender.Close() })
	listener, err := store.Open(ctx, url, store.Options{MaxReaders: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = listener.Close() })
	heard := make(signal, 1)
	channel := listener.Channel("bench_notify")
	stop, err := listener.Subscribe(ctx, channel, heard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	// A payload the size of a real executor wake-up.
	payload := fmt.Sprintf(`{"kind":"executor","run_public_id":%q,"task_key":"r2t0","executor_public_ids":[%q],"event":"work_available","tool_name":"screenshot","origin":"0123456789abcdef"}`,
		store.NewPublicID(), executorID)
	return func() (time.Duration, error) {
		start := time.Now()
		if err := sender.NotifyNow(ctx, channel, payload); err != nil {
			return 0, err
		}
		<-heard
		return time.Since(start), nil
	}
}

// BenchmarkPush is B8's push part, on PostgreSQL with two instances sharing one schema, each
// op one round trip measured end to end:
//
//   - notify: a bare NOTIFY from a pool connection heard by a LISTEN connection of another
//     store (the floor the push path stands on);
//   - push-remote: the hub of instance one publishes work_available (commit-free, as the run
//     engine does after its commit) and an SSE client on instance two reads the frame: NOTIFY,
//     the hub's fan-out, the SSE writer and the client's parser;
//   - push-local: the same with the stream on instance one, delivered in process.
//
// The parent logs p50 and p99 of each and the ratios to notify (goal: push p50 at most 2x).
func BenchmarkPush(b *testing.B) {
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // NOTIFY is PostgreSQL's; a single SQLite instance has only the local path
		}
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			one := testserver.Start(b, testserver.Options{Dialect: d, LogLevel: hclog.Info})
			two := testserver.Start(b, testserver.Options{Peer: one, LogLevel: hclog.Info})
			id, tok := newRunner(b, one, "bench")
			local, err := one.ClientWith(tok).Events(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer local.Close()
			remote, err := two.ClientWith(tok).Events(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer remote.Close()
			hub := one.Server().Push()

			notify := bareNotify(b, one.DatabaseURL, id)
			results := map[string]latencies{}
			// op runs one round trip and returns its latency; what it does after (draining the
			// other stream) is not counted.
			run := func(name string, op func(i int) (time.Duration, error)) {
				b.Run(name, func(b *testing.B) {
					l := make(latencies, 0, b.N)
					for i := 0; i < b.N; i++ {
						d, err := op(i)
						if err != nil {
							b.Fatal(err)
						}
						l = append(l, d)
					}
					results[name] = l
					b.ReportMetric(float64(l.quantile(0.5).Microseconds()), "p50-µs")
				})
			}
			run("notify", func(int) (time.Duration, error) { return notify() })
			await := func(s *client.EventStream, key string) error {
				ev, err := s.Next()
				if err != nil {
					return err
				}
				if ev.TaskKey != key {
					return fmt.Errorf("got %s, want %s", ev.TaskKey, key)
				}
				return nil
			}
			// Both streams hear every event; the one not measured is read after, so that it
			// never falls behind.
			push := func(prefix string, measured, other *client.EventStream) func(int) (time.Duration, error) {
				return func(i int) (time.Duration, error) {
					key := fmt.Sprintf("%s%dt0", prefix, i)
					// The publisher runs beside the reader, as the run engine's committing
					// goroutine does: the latency is the reader's, not the publish call's.
					published := make(chan struct{})
					start := time.Now()
					go func() {
						hub.WorkAvailable(id, key, "screenshot", []string{id})
						close(published)
					}()
					err := await(measured, key)
					d := time.Since(start)
					<-published
					if err != nil {
						return 0, err
					}
					return d, await(other, key)
				}
			}
			run("push-remote", push("r", remote, local))
			run("push-local", push("l", local, remote))
			n, r, l := results["notify"], results["push-remote"], results["push-local"]
			if len(n) > 0 && len(r) > 0 && len(l) > 0 {
				b.Logf("B8 push (%d/%d/%d ops): p50 notify %v, push-remote %v (%.2fx, goal <= 2), push-local %v (%.2fx); p99 notify %v, push-remote %v, push-local %v",
					len(n), len(r), len(l), n.quantile(0.5), r.quantile(0.5), float64(r.quantile(0.5))/float64(n.quantile(0.5)),
					l.quantile(0.5), float64(l.quantile(0.5))/float64(n.quantile(0.5)), n.quantile(0.99), r.quantile(0.99), l.quantile(0.99))
			}
		})
	}
}
