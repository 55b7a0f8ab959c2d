package server_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/client"
)

// counted collects the store's counts of one kind of operation, one per operation.
type counted []store.StatementCounts

// least is the smallest count of the operations: the operation's own, since the server's
// timers (the sweep, heartbeats, presence) only ever add statements to an operation they
// happen to overlap.
func (c counted) least() store.StatementCounts {
	if len(c) == 0 {
		return store.StatementCounts{}
	}
	s := append(counted(nil), c...)
	sort.Slice(s, func(i, j int) bool {
		return s[i].Statements < s[j].Statements || s[i].Statements == s[j].Statements && s[i].Transactions < s[j].Transactions
	})
	return s[0]
}

// String is the least count, as the benchmark logs it.
func (c counted) String() string {
	l := c.least()
	return fmt.Sprintf("%d statements in %d transactions", l.Statements, l.Transactions)
}

// BenchmarkStatements counts the statements and transactions of the executor plane's hot paths
// on each store, one operation at a time on an otherwise idle server
// (docs/development.md#where-the-time-goes): a one-step run created over HTTP (B6's subject), a
// claim and a commit over HTTP (B9's and B7's), and a memory plugin's claim of a row (B19's),
// with the inbox reads the plugin's claim loop made to find it and the plugin's commit. Each
// op is one operation of each kind; it logs the least count seen, which is the operation's own.
func BenchmarkStatements(b *testing.B) {
	bins := buildMemoryFS(b)
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			p := newBenchPlane(b, d)
			run, tasks := p.template(b, p.oneStep())
			var creates, claims, commits counted
			rows := p.clone(b, run, tasks, b.N)
			for i := 0; i < b.N; i++ {
				c0 := p.st.Statements()
				if _, err := p.admin.CreateRun(ctx, "default", p.oneStep(), ""); err != nil {
					b.Fatal(err)
				}
				c1 := p.st.Statements()
				cl, err := p.runner.ClaimWork(ctx, rows[i].run, rows[i].keys[0])
				if err != nil {
					b.Fatal(err)
				}
				c2 := p.st.Statements()
				if _, err := p.runner.Commit(ctx, rows[i].run, rows[i].keys[0], cl.Claim.ClaimToken, &client.Result{Content: "done"}); err != nil {
					b.Fatal(err)
				}
				c3 := p.st.Statements()
				creates, claims, commits = append(creates, c1.Sub(c0)), append(claims, c2.Sub(c1)), append(commits, c3.Sub(c2))
			}

			plane := &countingPlane{}
			cfg := memoryFSSettings(b, bins, false)
			srv := testserver.Start(b, testserver.Options{Dialect: d, LogLevel: hclog.Info, Config: cfg,
				PluginPlane: func(pp plugins.ExecutorPlane) plugins.ExecutorPlane { plane.ExecutorPlane = pp; return plane }})
			plane.st.Store(srv.Server().Store())
			admin := srv.Client()
			fsID := waitMemoryFS(b, admin)
			if _, err := admin.PutToolProviderOverrides(ctx, "default", map[string]string{"nexus.memory": fsID}, 0); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				if err := oneMemoryCall(ctx, admin, i); err != nil {
					b.Fatal(err)
				}
			}
			plane.mu.Lock()
			defer plane.mu.Unlock()
			b.Logf("%s, the least of %d each: run create over HTTP %v; claim over HTTP %v; commit over HTTP %v; plugin claim %v; plugin commit %v; plugin inbox reads that found rows %d for %d claims, %v each",
				d, b.N, creates, claims, commits, plane.claims, plane.commits, len(plane.inbox), len(plane.claims), plane.inbox)
		})
	}
}

// countingPlane counts the store's statements around the plugin host's inbox reads, claims and
// commits.
type countingPlane struct {
	plugins.ExecutorPlane
	// st is the server's store, set once the server started: the host reads its inbox before.
	st      atomic.Pointer[store.Store]
	mu      sync.Mutex
	inbox   counted
	claims  counted
	commits counted
}

func (c *countingPlane) Inbox(ctx context.Context, id, after string, limit int) ([]plugins.InboxRow, string, error) {
	st := c.st.Load()
	if st == nil {
		return c.ExecutorPlane.Inbox(ctx, id, after, limit)
	}
	before := st.Statements()
	rows, next, err := c.ExecutorPlane.Inbox(ctx, id, after, limit)
	if err == nil && len(rows) > 0 {
		d := st.Statements().Sub(before)
		c.mu.Lock()
		c.inbox = append(c.inbox, d)
		c.mu.Unlock()
	}
	return rows, next, err
}

func (c *countingPlane) Claim(ctx context.Context, id, runID, taskKey string) (plugins.Claim, error) {
	st := c.st.Load()
	if st == nil {
		return c.ExecutorPlane.Claim(ctx, id, runID, taskKey)
	}
	before := st.Statements()
	cl, err := c.ExecutorPlane.Claim(ctx, id, runID, taskKey)
	if err == nil {
		d := st.Statements().Sub(before)
		c.mu.Lock()
		c.claims = append(c.claims, d)
		c.mu.Unlock()
	}
	return cl, err
}

func (c *countingPlane) Commit(ctx context.Context, id string, cl plugins.Claim, body plugins.CommitBody) error {
	st := c.st.Load()
	if st == nil {
		return c.ExecutorPlane.Commit(ctx, id, cl, body)
	}
	before := st.Statements()
	err := c.ExecutorPlane.Commit(ctx, id, cl, body)
	if err == nil {
		d := st.Statements().Sub(before)
		c.mu.Lock()
		c.commits = append(c.commits, d)
		c.mu.Unlock()
	}
	return err
}

// waitMemoryFS waits for the memory-fs plugin to be ready and answers its executor's id.
func waitMemoryFS(b *testing.B, admin *client.Client) string {
	b.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, err := admin.Plugin(context.Background(), "memory-fs")
		if err == nil && st.Plugin.State == string(plugins.StateReady) && st.Plugin.ExecutorPublicID != nil {
			return *st.Plugin.ExecutorPublicID
		}
		if time.Now().After(deadline) {
			b.Fatalf("memory-fs not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// oneMemoryCall runs one run of one memory call to its end.
func oneMemoryCall(ctx context.Context, admin *client.Client, n int) error {
	script := fmt.Sprintf("Note.\n!mock\nround 1\ncall memory_write {\"path\":\"workspace/count-%d.md\",\"content\":\"n\"}\nround 2\nsay done", n%32)
	created, err := admin.CreateRun(ctx, "default", memoryRunOf(script), "")
	if err != nil {
		return err
	}
	r, err := admin.WaitRun(ctx, "default", created.Run.PublicID, 30)
	if err != nil {
		return err
	}
	if r.Run.Status != "completed" {
		return fmt.Errorf("run %s ended %s: %s", created.Run.PublicID, r.Run.Status, r.Raw)
	}
	return nil
}

// memoryRunOf is a run of the mock's script with the memory family imported and allowed.
func memoryRunOf(script string) map[string]any {
	return map[string]any{
		"steps": []any{map[string]any{"model": map[string]any{
			"model": "mock/scripted", "prompt": script, "instructions": "You keep notes.",
			"kernel_tools": []string{"nexus.memory.ls", "nexus.memory.read", "nexus.memory.grep", "nexus.memory.write", "nexus.memory.edit"},
		}}},
		"approval_mode":  "rules",
		"approval_rules": []any{map[string]any{"tool": "memory_*", "verdict": "allow"}},
	}
}
