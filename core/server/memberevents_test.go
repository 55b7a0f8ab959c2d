package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/httpapi"
	"github.com/nexuskernel/nexus/core/model/modeltest"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// memberStream reads a member stream on a goroutine, so that a test waits on a condition with a
// deadline instead of blocking on a read.
type memberStream struct {
	s  *client.MemberEventStream
	ch chan *client.MemberEvent
}

func openMembers(t *testing.T, c *client.Client, ws string, o client.MemberEventOptions) *memberStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.MemberEvents(ctx, ws, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	m := &memberStream{s: s, ch: make(chan *client.MemberEvent, 1024)}
	go func() {
		defer close(m.ch)
		for {
			ev, err := s.Next()
			if err != nil {
				return
			}
			m.ch <- ev
		}
	}()
	t.Cleanup(func() { cancel(); s.Close() })
	return m
}

// until reads events until one satisfies done, and answers every event read, in order.
func (m *memberStream) until(t *testing.T, done func(*client.MemberEvent) bool) []*client.MemberEvent {
	t.Helper()
	var got []*client.MemberEvent
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-m.ch:
			if !ok {
				t.Fatalf("the stream ended after %s", describe(got))
			}
			got = append(got, ev)
			if done(ev) {
				return got
			}
		case <-deadline:
			t.Fatalf("no matching event within 20 s; read %s", describe(got))
		}
	}
}

func describe(evs []*client.MemberEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %s %s", ev.Type, ev.Data)
	}
	return b.String()
}

// kinds lists "type key status" of each event of run.
func kinds(evs []*client.MemberEvent, run string) []string {
	var out []string
	for _, ev := range evs {
		if ev.RunPublicID != run {
			continue
		}
		s := ev.Type
		if ev.TaskKey != "" {
			s += " " + ev.TaskKey
		}
		if ev.Status != "" {
			s += " " + ev.Status
		}
		out = append(out, s)
	}
	return out
}

func runCompleted(run string) func(*client.MemberEvent) bool {
	return func(ev *client.MemberEvent) bool {
		return ev.Type == client.MemberRunStatus && ev.RunPublicID == run && ev.Status == "completed"
	}
}

// TestMemberStreamFollowsARun: a member's stream carries a run's whole life in order (born
// running, its row parked, claimed and settled, the run completed; a model round sealed), each
// event with an id; a stream narrowed to a run carries that run's only; a member of another
// workspace sees none of it and cannot open this workspace's stream.
func TestMemberStreamFollowsARun(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			p := newBenchPlane(t, d)
			ctx := context.Background()
			all := openMembers(t, p.admin, "default", client.MemberEventOptions{})
			if _, err := p.admin.CreateWorkspace(ctx, &client.CreateWorkspaceRequest{Handle: "other", Name: "Other"}); err != nil {
				t.Fatal(err)
			}
			stranger, err := p.admin.CreateUser(ctx, "other", &client.CreateUserRequest{Handle: "sam", DisplayName: "Sam", Role: "member"})
			if err != nil {
				t.Fatal(err)
			}
			sam := p.srv.ClientWith(stranger.Token)
			if _, err := sam.MemberEvents(ctx, "default", client.MemberEventOptions{}); !isCode(err, http.StatusNotFound, "not_found") && !isCode(err, http.StatusForbidden, "forbidden") {
				t.Fatalf("another workspace's member opened this one's stream: %v", err)
			}
			theirs := openMembers(t, sam, "other", client.MemberEventOptions{})

			created, err := p.admin.CreateRun(ctx, "default", p.oneStep(), "")
			if err != nil {
				t.Fatal(err)
			}
			run := created.Run.PublicID
			key := created.Receipt.DeliverableTaskKey
			only := openMembers(t, p.admin, "default", client.MemberEventOptions{RunPublicID: run})
			cl, err := p.runner.ClaimWork(ctx, run, key)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.runner.Commit(ctx, run, key, cl.Claim.ClaimToken, &client.Result{Content: "done"}); err != nil {
				t.Fatal(err)
			}
			got := all.until(t, runCompleted(run))
			want := []string{"run.status running", "task.parked " + key, "task.claimed " + key, "task.settled " + key + " completed", "run.status completed"}
			if k := kinds(got, run); !slices.Equal(k, want) {
				t.Fatalf("the run's life on the stream:\n got %q\nwant %q%s", k, want, describe(got))
			}
			for _, ev := range got {
				if ev.ID == "" || ev.WorkspacePublicID != created.Run.WorkspacePublicID {
					t.Fatalf("event without its id or workspace: %s %s", ev.Type, ev.Data)
				}
			}
			if ev := got[2]; ev.ExecutorPublicID != p.id || ev.Kind != "tool_task" || ev.ToolName != "work" {
				t.Fatalf("task.claimed = %s", ev.Data)
			}

			model, err := p.admin.CreateRun(ctx, "default", json.RawMessage(`{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}]}`), "")
			if err != nil {
				t.Fatal(err)
			}
			got = all.until(t, runCompleted(model.Run.PublicID))
			r1 := model.Receipt.DeliverableTaskKey
			want = []string{"run.status running", "model.delta " + r1, "round.sealed " + r1, "task.settled " + r1 + " completed", "run.status completed"}
			if k := kinds(got, model.Run.PublicID); !slices.Equal(k, want) {
				t.Fatalf("the model run on the stream:\n got %q\nwant %q%s", k, want, describe(got))
			}
			if k := kinds(got, run); len(k) != 0 {
				t.Fatalf("events of the first run after its completion: %q", k)
			}
			narrowed := only.until(t, runCompleted(run))
			for _, ev := range narrowed {
				if ev.RunPublicID != run {
					t.Fatalf("a stream narrowed to %s carried %s %s", run, ev.Type, ev.Data)
				}
			}
			select {
			case ev := <-theirs.ch:
				t.Fatalf("another workspace's member heard %s %s", ev.Type, ev.Data)
			default:
			}
		})
	}
}

func isCode(err error, status int, code string) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Status == status && ce.Code == code
}

// TestMemberStreamResumes: a reconnect with Last-Event-ID inside the window misses nothing; one
// whose id another instance (or this one before a restart) gave, or that left the window,
// starts with one resync event whose id resumes from there.
func TestMemberStreamResumes(t *testing.T) {
	t.Parallel()
	p := newBenchPlane(t, store.SQLite)
	ctx := context.Background()
	first := openMembers(t, p.admin, "default", client.MemberEventOptions{})
	one, err := p.admin.CreateRun(ctx, "default", p.oneStep(), "")
	if err != nil {
		t.Fatal(err)
	}
	seen := first.until(t, func(ev *client.MemberEvent) bool { return ev.Type == client.MemberTaskParked })
	last := seen[len(seen)-1].ID
	first.s.Close()
	// Written while no stream is open: the resumed stream must carry it.
	cl, err := p.runner.ClaimWork(ctx, one.Run.PublicID, one.Receipt.DeliverableTaskKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.runner.Commit(ctx, one.Run.PublicID, one.Receipt.DeliverableTaskKey, cl.Claim.ClaimToken, &client.Result{Content: "done"}); err != nil {
		t.Fatal(err)
	}
	resumed := openMembers(t, p.admin, "default", client.MemberEventOptions{LastEventID: last})
	got := resumed.until(t, runCompleted(one.Run.PublicID))
	key := one.Receipt.DeliverableTaskKey
	if k := kinds(got, one.Run.PublicID); !slices.Equal(k, []string{"task.claimed " + key, "task.settled " + key + " completed", "run.status completed"}) {
		t.Fatalf("resumed after %s: %q%s", last, k, describe(got))
	}
	end := got[len(got)-1].ID

	for _, id := range []string{"0a0a0a0a0a0a-3", "not-an-id"} {
		s := openMembers(t, p.admin, "default", client.MemberEventOptions{LastEventID: id})
		ev := s.until(t, func(*client.MemberEvent) bool { return true })[0]
		if ev.Type != client.MemberResync || ev.Reason != httpapi.ResyncUnknownID || ev.ID != end {
			t.Fatalf("resume after %q began with %s %s id %s; want resync %s id %s", id, ev.Type, ev.Data, ev.ID, httpapi.ResyncUnknownID, end)
		}
	}
	// Past the window: another workspace's events push the first ones out of it.
	bus := p.srv.Server().Events()
	for range events.Window {
		bus.Publish(events.RunStatus{Scope: events.Scope{Workspace: "elsewhere"}, Status: "running"})
	}
	stale := openMembers(t, p.admin, "default", client.MemberEventOptions{LastEventID: last})
	if ev := stale.until(t, func(*client.MemberEvent) bool { return true })[0]; ev.Type != client.MemberResync || ev.Reason != httpapi.ResyncWindow {
		t.Fatalf("resume from outside the window began with %s %s", ev.Type, ev.Data)
	}
}

// TestMemberStreamBounds: a member holds at most httpapi.MaxMemberStreams streams on one
// instance (429 rate_limited with Retry-After beyond), and an idle stream carries keep-alive
// comments and asks for a retry delay.
func TestMemberStreamBounds(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testserver.Options{})
	ctx := context.Background()
	var open []*client.MemberEventStream
	for range httpapi.MaxMemberStreams {
		s, err := srv.Client().MemberEvents(ctx, "default", client.MemberEventOptions{})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	_, err := srv.Client().MemberEvents(ctx, "default", client.MemberEventOptions{})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusTooManyRequests || ce.Code != "rate_limited" || ce.RetryAfter <= 0 {
		t.Fatalf("stream %d = %v; want 429 rate_limited with Retry-After", httpapi.MaxMemberStreams+1, err)
	}
	open[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := srv.Client().MemberEvents(ctx, "default", client.MemberEventOptions{})
		if err == nil {
			s.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's slot was not freed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range open[1:] {
		s.Close()
	}
}

// TestMemberStreamKeepAlive: an idle stream opens with its retry field and carries a keep-alive
// comment every interval; a HEAD answers the stream's headers and ends.
func TestMemberStreamKeepAlive(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testserver.Options{EventKeepAlive: 20 * time.Millisecond})
	head, err := http.NewRequest(http.MethodHead, srv.URL+"/agent_api/v1/workspaces/default/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	head.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	hr, err := http.DefaultClient.Do(head)
	if err != nil || hr.StatusCode != http.StatusOK || hr.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD = %v, %v", hr, err)
	}
	hr.Body.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/agent_api/v1/workspaces/default/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	want := []string{fmt.Sprintf("retry: %d", httpapi.MemberStreamRetry.Milliseconds()), "", ": keep-alive", "", ": keep-alive"}
	for i, w := range want {
		line, err := br.ReadString('\n')
		if err != nil || strings.TrimRight(line, "\n") != w {
			t.Fatalf("line %d = %q, %v; want %q", i, line, err, w)
		}
	}
}

// TestMemberStreamAcrossInstances: on PostgreSQL a run created and finished on one instance
// reaches a member stream held on another, in order, and a waiting read on the other answers
// when the run completes, without a timer; an id the first instance gave resyncs on the second.
func TestMemberStreamAcrossInstances(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // SQLite serves a single instance
		}
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			one := testserver.Start(t, testserver.Options{Dialect: d})
			two := testserver.Start(t, testserver.Options{Peer: one})
			far := openMembers(t, two.Client(), "default", client.MemberEventOptions{})
			created, err := one.Client().CreateRun(ctx, "default", json.RawMessage(`{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsleep 300\nsay hi"}}]}`), "")
			if err != nil {
				t.Fatal(err)
			}
			run := created.Run.PublicID
			waited := make(chan *client.RunResponse, 1)
			go func() {
				r, _ := two.Client().WaitRun(ctx, "default", run, 30)
				waited <- r
			}()
			got := far.until(t, runCompleted(run))
			r1 := created.Receipt.DeliverableTaskKey
			want := []string{"run.status running", "model.delta " + r1, "round.sealed " + r1, "task.settled " + r1 + " completed", "run.status completed"}
			if k := kinds(got, run); !slices.Equal(k, want) {
				t.Fatalf("another instance's run on the stream:\n got %q\nwant %q%s", k, want, describe(got))
			}
			select {
			case r := <-waited:
				if r == nil || r.Run.Status != "completed" {
					t.Fatalf("waiting read on the other instance = %+v", r)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the waiting read on the other instance did not answer")
			}
			resumed := openMembers(t, one.Client(), "default", client.MemberEventOptions{LastEventID: got[len(got)-1].ID})
			if ev := resumed.until(t, func(*client.MemberEvent) bool { return true })[0]; ev.Type != client.MemberResync || ev.Reason != httpapi.ResyncUnknownID {
				t.Fatalf("an id of another instance resumed with %s %s", ev.Type, ev.Data)
			}
		})
	}
}

// deltasOf reads a member stream until run's round key is sealed, and answers the text its
// model.delta events spelled, the tool calls they named, and whether every delta came before
// the seal, with no id.
func deltasOf(t *testing.T, m *memberStream, run string) (text string, calls []string) {
	t.Helper()
	got := m.until(t, func(ev *client.MemberEvent) bool { return ev.Type == client.MemberRoundSealed && ev.RunPublicID == run })
	var b strings.Builder
	for _, ev := range got {
		if ev.Type != client.MemberModelDelta || ev.RunPublicID != run {
			continue
		}
		if ev.ID != "" {
			t.Fatalf("a model.delta with an id: %s", ev.ID)
		}
		b.WriteString(ev.Text)
		if ev.ToolCall != "" {
			calls = append(calls, ev.ToolCall)
		}
	}
	return b.String(), calls
}

// TestModelDeltasStream: while a round runs, the members following it read its text as the
// provider streams it (the mock in pieces; a loopback OpenAI-compatible server on the real
// streaming wire, chunk by chunk), then the seal; a stream resumed after the seal sees no delta.
func TestModelDeltasStream(t *testing.T) {
	t.Parallel()
	fake := modeltest.NewFake(t, modeltest.Reply{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, SSE: true, Body: strings.Join([]string{
		`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Ship "},"finish_reason":null}]}`, "",
		`data: {"choices":[{"index":0,"delta":{"content":"on Fri"},"finish_reason":null}]}`, "",
		`data: {"choices":[{"index":0,"delta":{"content":"day."},"finish_reason":null}]}`, "",
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "",
		`data: [DONE]`, "", ""}, "\n")})
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"NEXUS_TEST_KEY": "k"}, Config: fmt.Sprintf(`
model_provider "loop" {
  type     = "openai"
  base_url = %q
  api_key  = env("NEXUS_TEST_KEY")
}
model "loop/m" {
  id = "m"
  capabilities {
    tools             = true
    context_window    = 100000
    max_output_tokens = 1000
  }
}
`, fake.URL+"/v1")})
	ctx := context.Background()
	c := srv.Client()
	m := openMembers(t, c, "default", client.MemberEventOptions{})
	long := "The plan is to ship on Friday, after the review, with the docs."
	mock, err := c.CreateRun(ctx, "default", json.RawMessage(`{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay `+long+`\ncall memory_ls {}\nround 2\nsay ok"}}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	text, calls := deltasOf(t, m, mock.Run.PublicID)
	if text != long || !slices.Equal(calls, []string{"memory_ls"}) {
		t.Fatalf("the mock's deltas spelled %q and %q", text, calls)
	}
	loop, err := c.CreateRun(ctx, "default", json.RawMessage(`{"approval_mode":"bypass","steps":[{"model":{"model":"loop/m","prompt":"When?"}}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if text, calls := deltasOf(t, m, loop.Run.PublicID); text != "Ship on Friday." || len(calls) != 0 {
		t.Fatalf("the OpenAI stream's deltas spelled %q and %q", text, calls)
	}
	done, err := c.WaitRun(ctx, "default", loop.Run.PublicID, 30)
	if err != nil || done.Run.Answer == nil || *done.Run.Answer != "Ship on Friday." {
		t.Fatalf("the loopback run = %+v, %v", done, err)
	}
	first := srv.Server().Events().Epoch() + "-0"
	replay := openMembers(t, c, "default", client.MemberEventOptions{LastEventID: first, RunPublicID: loop.Run.PublicID})
	for _, ev := range replay.until(t, runCompleted(loop.Run.PublicID)) {
		if ev.Type == client.MemberModelDelta {
			t.Fatalf("a resumed stream replayed a delta: %s", ev.Data)
		}
	}
}

// TestPluginStateReachesOwners: a plugin's state change, which concerns no workspace, reaches
// the streams of workspace owners (who read the plugins' status) and not those of other members.
func TestPluginStateReachesOwners(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testserver.Options{})
	ctx := context.Background()
	mem, err := srv.Client().CreateUser(ctx, "default", &client.CreateUserRequest{Handle: "max", DisplayName: "Max", Role: "member"})
	if err != nil {
		t.Fatal(err)
	}
	owner := openMembers(t, srv.Client(), "default", client.MemberEventOptions{})
	member := openMembers(t, srv.ClientWith(mem.Token), "default", client.MemberEventOptions{})
	srv.Server().Events().Publish(events.PluginState{Name: "memory-fs", State: "restarting", Instance: "inst_x"})
	ran, err := srv.Client().CreateRun(ctx, "default", json.RawMessage(`{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	got := owner.until(t, func(ev *client.MemberEvent) bool { return ev.Type == "plugin.state" })
	if ev := got[len(got)-1]; !strings.Contains(string(ev.Data), `"name":"memory-fs","state":"restarting","instance":"inst_x"`) || ev.WorkspacePublicID != "" {
		t.Fatalf("the owner heard %s", ev.Data)
	}
	for _, ev := range member.until(t, runCompleted(ran.Run.PublicID)) {
		if ev.Type == "plugin.state" {
			t.Fatalf("a member who is not an owner heard %s", ev.Data)
		}
	}
}
