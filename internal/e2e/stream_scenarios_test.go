package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestRevocationSettlesWork (docs/api.md#executors): revoking an executor settles its dispatched
// rows (claimed or not) and the pool rows it claimed failed executor_revoked, leaves unclaimed
// pool rows to the other members, closes its streams, and settles rows that reach dispatch later
// addressed to it the same way.
func TestRevocationSettlesWork(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r, r2 := p.executor("runner", "laptop"), p.executor("runner", "ci")
			pe, q := p.executor("tool_provider", "p"), p.executor("tool_provider", "q")
			p.announce(r, tool("screenshot", 0))
			p.announce(r2, tool("screenshot", 0))
			p.announce(pe, tool("lookup", 0))
			p.announce(q, tool("lookup", 0))
			rEv, pEv := p.events(r), p.events(pe)

			claimedRun, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, nil)}, "")
			if err != nil {
				t.Fatal(err)
			}
			p.claimed(r, claimedRun.Run.PublicID, "s1-tool-1")
			unclaimedRun, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, nil)}, "")
			if err != nil {
				t.Fatal(err)
			}
			p.inboxRow(r, unclaimedRun.Run.PublicID, "s1-tool-1")
			laterRun, err := p.toolRun(p.admin, []any{toolStep("screenshot", r2.id, map[string]any{"key": "first"}),
				toolStep("screenshot", r.id, map[string]any{"key": "second"})}, "")
			if err != nil {
				t.Fatal(err)
			}
			pool := "!mock\nround 1\ncall lookup {}\nround 2\nsay {{last_result}}"
			poolClaimed := p.modelRun("mock/scripted", pool, []any{plain("lookup")}, nil, "bypass", nil)
			p.claimed(pe, poolClaimed, "r2t0")
			poolOpen := p.modelRun("mock/scripted", pool, []any{plain("lookup")}, nil, "bypass", nil)
			p.inboxRow(q, poolOpen, "r2t0")

			if _, err := p.admin.RevokeExecutor(p.ctx, r.id); err != nil {
				t.Fatal(err)
			}
			if _, err := p.admin.RevokeExecutor(p.ctx, pe.id); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ run, key string }{
				{claimedRun.Run.PublicID, "s1-tool-1"}, {unclaimedRun.Run.PublicID, "s1-tool-1"}, {poolClaimed, "r2t0"},
			} {
				tk := p.waitTask(c.run, c.key, "failed")
				if tk.Task.Error == nil || tk.Task.Error.Key != "executor_revoked" {
					t.Fatalf("%s: %s", c.key, tk.Raw)
				}
			}
			if tk := p.task(poolOpen, "r2t0"); tk.Task.Status != "dispatched" {
				t.Fatalf("the unclaimed pool row %s", tk.Raw)
			}
			p.claim(q, poolOpen, "r2t0") // the remaining member still serves it
			for name, ev := range map[string]*events{"runner": rEv, "provider": pEv} {
				select {
				case _, ok := <-ev.ch:
					if ok {
						for range ev.ch {
						}
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("the revoked %s's stream stayed open", name)
				}
			}
			tok := p.claimed(r2, laterRun.Run.PublicID, "first")
			p.commit(r2, laterRun.Run.PublicID, "first", tok, &client.Result{Content: "ok"})
			if tk := p.waitTask(laterRun.Run.PublicID, "second", "failed"); tk.Task.Error == nil || tk.Task.Error.Key != "executor_revoked" {
				t.Fatalf("second: %s", tk.Raw)
			}
		})
	}
}

// TestEventStreamReconnects is scenario 22: nothing is replayed on reconnect, the inbox lists
// what arrived meanwhile, and a ping arrives within 15 seconds.
func TestEventStreamReconnects(t *testing.T) {
	t.Parallel()
	p := newPlane(t, store.SQLite)
	r := p.executor("runner", "laptop")
	p.announce(r, tool("screenshot", 0))
	first := p.events(r)
	_ = first.stream.Close()
	created, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, nil)}, "")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", p.srv.URL+"/agent_api/v1/executor/events", nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Last-Event-ID", "17")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("stream %d %v", resp.StatusCode, resp.Header)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var got []string
	deadline := time.After(16 * time.Second)
	for !contains(got, ": ping") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended: %q", got)
			}
			got = append(got, l)
		case <-deadline:
			t.Fatalf("no ping within 15 s: %q", got)
		}
	}
	want := []string{"retry: 3000", "", ": connected " + r.id, ""}
	if strings.Join(got[:4], "\n") != strings.Join(want, "\n") {
		t.Fatalf("opening frames %q", got)
	}
	for _, l := range got {
		if hasPrefixAny(l, "event:", "id:", "data:") {
			t.Fatalf("replayed %q", got)
		}
	}
	p.inboxRow(r, created.Run.PublicID, "s1-tool-1")
}

// TestUploadsOverThePlane is scenario 23: ranges, ETags, isolation, the size bound, and the
// reclamation of unbound captures while bound ones stay.
func TestUploadsOverThePlane(t *testing.T) {
	t.Parallel()
	p := newPlane(t, store.SQLite)
	r := p.executor("runner", "laptop")
	p.announce(r, tool("screenshot", 0))
	data := bytes.Repeat([]byte("0123456789"), 50)
	bound := p.capture(r, "bound.txt", data)
	loose := p.capture(r, "loose.txt", data)
	created, err := p.toolRun(p.admin, []any{toolStep("screenshot", r.id, nil)}, "")
	if err != nil {
		t.Fatal(err)
	}
	run := created.Run.PublicID
	tok := p.claimed(r, run, "s1-tool-1")
	p.commit(r, run, "s1-tool-1", tok, &client.Result{Content: []client.ContentBlock{client.LinkBlock(&bound.Upload, "bound.txt")}})

	ranged, err := p.admin.UploadBytes(p.ctx, bound.Upload.PublicID, &client.BytesRequest{Range: "bytes=0-99"})
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(ranged.Body)
	ranged.Body.Close()
	if ranged.Status != 206 || ranged.ContentRange != "bytes 0-99/"+strconv.Itoa(len(data)) || !bytes.Equal(part, data[:100]) {
		t.Fatalf("range %d %q", ranged.Status, ranged.ContentRange)
	}
	same, err := p.admin.UploadBytes(p.ctx, bound.Upload.PublicID, &client.BytesRequest{IfNoneMatch: ranged.ETag})
	if err != nil || same.Status != 304 || !same.NotModified {
		t.Fatalf("If-None-Match: %v %v", same, err)
	}
	if _, err := p.admin.CreateWorkspace(p.ctx, &client.CreateWorkspaceRequest{Handle: "other", Name: "Other"}); err != nil {
		t.Fatal(err)
	}
	eve, err := p.admin.CreateUser(p.ctx, "other", &client.CreateUserRequest{Handle: "eve", DisplayName: "Eve", Role: "member"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.srv.ClientWith(eve.Token).UploadBytes(p.ctx, bound.Upload.PublicID, nil)
	wantCode(t, err, 404, "not_found")
	_, err = r.c.StageCapture(p.ctx, "huge.bin", io.LimitReader(zeros{}, 100<<20+1))
	wantCode(t, err, 413, "content_too_large")

	p.clock.Advance(24*time.Hour + time.Minute)
	if _, err := p.srv.Server().Uploads().Reclaim(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = r.c.Capture(p.ctx, loose.Upload.PublicID)
	wantCode(t, err, 404, "not_found")
	still, err := p.admin.UploadBytes(p.ctx, bound.Upload.PublicID, nil)
	if err != nil || still.Status != 200 {
		t.Fatalf("bound capture after 24 h: %v", err)
	}
	still.Body.Close()
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// TestTwoInstancesPush is scenario 21's push part on PostgreSQL: a row dispatched on instance 2
// reaches a stream held by instance 1 through NOTIFY, a claim made on one instance commits on the
// other, and a revocation on instance 2 closes the stream instance 1 holds.
func TestTwoInstancesPush(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d == store.Postgres { // several instances share PostgreSQL; SQLite serves one
			twoInstancesPush(t)
		}
	}
}

func twoInstancesPush(t *testing.T) {
	clock := testserver.NewClock()
	one := testserver.Start(t, testserver.Options{Dialect: store.Postgres, Now: clock.Now})
	two := testserver.Start(t, testserver.Options{Peer: one, Now: clock.Now})
	p1 := &plane{t: t, srv: one, clock: clock, admin: one.Client(), ctx: context.Background()}
	p2 := &plane{t: t, srv: two, clock: clock, admin: two.Client(), ctx: context.Background()}
	r := p1.executor("runner", "laptop")
	p1.announce(r, tool("screenshot", 0))
	ev := p1.events(r)
	created, err := p2.toolRun(p2.admin, []any{toolStep("screenshot", r.id, nil)}, "")
	if err != nil {
		t.Fatal(err)
	}
	run := created.Run.PublicID
	if got := ev.next(t); got.Type != "work_available" || got.RunPublicID != run {
		t.Fatalf("event %s", got.Data)
	}
	cl := p1.claim(r, run, "s1-tool-1")
	onTwo := &executor{id: r.id, token: r.token, c: two.ClientWith(r.token)}
	if res := p2.commit(onTwo, run, "s1-tool-1", cl.Claim.ClaimToken, &client.Result{Content: "across"}); !res.Applied {
		t.Fatalf("commit on instance 2 %s", res.Raw)
	}
	if _, err := p2.admin.RevokeExecutor(p2.ctx, r.id); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ev.ch:
		if ok {
			for range ev.ch {
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream on instance 1 outlived a revocation on instance 2")
	}
}

// TestCrashRecoveryTwoInstances is scenario 21's crash on PostgreSQL: instance 1 claims a model
// round whose script sleeps and is killed before it answers; instance 2, started on the same
// database, releases the lost claim at the model timeout, claims the round as attempt 2, replays
// its sealed request, and the run completes.
func TestCrashRecoveryTwoInstances(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres { // several instances share PostgreSQL; SQLite serves one
			continue
		}
		config := `
kernel {
  workers        = 2
  model_timeout  = "2s"
  sweep_interval = "100ms"
}
`
		one := testserver.Start(t, testserver.Options{Dialect: d, Subprocess: true, Config: config})
		c := one.Client()
		ctx := context.Background()
		script := "Survive.\n!mock\nround 1\nsleep 1500\ncall memory_write {\"path\":\"workspace/a.md\",\"content\":\"a\"}\nround 2\nsay done {{round}}"
		created, err := c.CreateRun(ctx, "default", memoryRun(script), "")
		if err != nil {
			t.Fatal(err)
		}
		run := created.Run.PublicID
		// The worker claims the round, then seals its request in a later transaction: wait for
		// the sealed request, which the round's 1.5 s sleep keeps in flight.
		deadline := time.Now().Add(30 * time.Second)
		var first []byte
		for {
			tk, err := c.Task(ctx, "default", run, "s1-model-1")
			if err == nil && tk.Task.Attempts != nil && *tk.Task.Attempts >= 1 && tk.Task.Status == "running" {
				if req, err := c.SealedRequest(ctx, "default", run, "s1-model-1"); err == nil {
					first = req
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("the round never started on instance 1")
			}
			time.Sleep(10 * time.Millisecond)
		}
		one.Kill()
		two := testserver.Start(t, testserver.Options{Peer: one, Subprocess: true, Config: config})
		c2 := two.Client()
		final := waitRun(t, c2, run, 60*time.Second)
		if final.Status != "completed" || deref(final.Answer) != "done 2" {
			t.Fatalf("run after the crash: %s %q", final.Status, deref(final.Answer))
		}
		tk, err := c2.Task(ctx, "default", run, "s1-model-1")
		if err != nil || tk.Task.Attempts == nil || *tk.Task.Attempts < 2 {
			t.Fatalf("attempts after the crash: %s %v", tk.Raw, err)
		}
		again, err := c2.SealedRequest(ctx, "default", run, "s1-model-1")
		if err != nil || !bytes.Equal(first, again) {
			t.Fatalf("the replay sealed another request: %v", err)
		}
	}
}

// TestReadinessMatchesRulesOnInput: steps that become ready when a Runner's commit settles
// their predecessor (readiness over the run's trace, not the creating transaction) are
// matched against the run's approval rules by their input: a path rule lets a step through
// whose input does not match and denies the one whose input does (approval_denied with the
// rule's reason).
func TestReadinessMatchesRulesOnInput(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "laptop")
			p.announce(r, tool("fetch", 0))
			step := func(key, path string) map[string]any {
				return toolStep("fetch", r.id, map[string]any{"key": key, "input": map[string]any{"path": path}})
			}
			run, err := p.admin.CreateRun(p.ctx, "default", map[string]any{"approval_mode": "rules", "approval_rules": []any{
				map[string]any{"tool": "fetch", "origin": "author", "path": "path", "match": "secret/*", "verdict": "deny", "reason": "no secrets"},
				map[string]any{"tool": "*", "origin": "author", "verdict": "allow"}},
				"steps": []any{step("a", "open/a"), step("b", "open/b"), step("c", "secret/c")}}, "")
			if err != nil {
				t.Fatal(err)
			}
			id := run.Run.PublicID
			p.commit(r, id, "a", p.claimed(r, id, "a"), &client.Result{Content: "ok"})
			p.commit(r, id, "b", p.claimed(r, id, "b"), &client.Result{Content: "ok"})
			tk := p.waitTask(id, "c", "failed")
			if tk.Task.Error == nil || tk.Task.Error.Key != "approval_denied" || tk.Task.Error.Detail != "no secrets" {
				t.Fatalf("c: %s", tk.Raw)
			}
		})
	}
}
