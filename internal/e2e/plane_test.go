package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
)

// plane is one real server for the executor plane's scenarios (docs/api.md#the-executor-plane),
// with a clock the test moves and the owner's client.
type plane struct {
	t     *testing.T
	srv   *testserver.Instance
	clock *testserver.Clock
	admin *client.Client
	ctx   context.Context
}

func newPlane(t *testing.T, d store.Dialect) *plane {
	t.Helper()
	clock := testserver.NewClock()
	srv := testserver.Start(t, testserver.Options{Dialect: d, Now: clock.Now, Config: `
kernel {
  sweep_interval = "50ms"
}
`})
	return &plane{t: t, srv: srv, clock: clock, admin: srv.Client(), ctx: context.Background()}
}

// executor is one runner or tool provider with its own client.
type executor struct {
	id, token string
	c         *client.Client
}

func tokenOf(e *executor) string { return e.token }

func (p *plane) executor(kind, name string) *executor {
	p.t.Helper()
	res, err := p.admin.CreateExecutor(p.ctx, &client.CreateExecutorRequest{Kind: kind, DisplayName: name})
	if err != nil {
		p.t.Fatal(err)
	}
	return &executor{id: res.Executor.PublicID, token: res.Token, c: p.srv.ClientWith(res.Token)}
}

func profileOf(kind string, destructive bool, idempotency string) *announce.AnnouncedProfile {
	return &announce.AnnouncedProfile{Kind: kind, Destructive: &destructive, EffectScope: "open", Idempotency: idempotency, Reconciliation: "none"}
}

func ptrTo[T any](v T) *T { return &v }

// tool is an announced model tool with a read-only profile and a timeout.
func tool(name string, timeoutMS int64) announce.Tool {
	t := announce.Tool{Name: name, Description: ptrTo("Run " + name + "."), InputSchema: json.RawMessage(`{"type":"object"}`),
		EffectProfile: profileOf("read_only", false, "intrinsic")}
	if timeoutMS > 0 {
		t.TimeoutMS = &timeoutMS
	}
	return t
}

func (p *plane) announce(e *executor, tools ...announce.Tool) {
	p.t.Helper()
	if _, err := e.c.Announce(p.ctx, announce.Announcement{Tools: tools}); err != nil {
		p.t.Fatal(err)
	}
}

// routed is a declaration entry for a tool served by a Runner.
func routed(name, runner string) map[string]any {
	return map[string]any{
		"type":     "function",
		"function": map[string]any{"name": name, "description": "Run " + name + ".", "parameters": map[string]any{"type": "object"}},
		"route":    map[string]any{"kind": "runner", "runner_executor_public_id": runner, "tool_name": name},
	}
}

// plain is a declaration entry for a tool served by a pool.
func plain(name string) map[string]any {
	return map[string]any{
		"type":     "function",
		"function": map[string]any{"name": name, "description": "Run " + name + ".", "parameters": map[string]any{"type": "object"}},
	}
}

// modelRun creates a standalone run of one model step with these declared tools.
func (p *plane) modelRun(model, script string, tools []any, kernelTools []string, mode string, extra map[string]any) string {
	p.t.Helper()
	step := map[string]any{"model": model, "prompt": script}
	if len(tools) > 0 {
		step["tools"] = tools
	}
	if kernelTools != nil {
		step["kernel_tools"] = kernelTools
	}
	run := map[string]any{"steps": []any{map[string]any{"model": step}}, "approval_mode": mode}
	for k, v := range extra {
		run[k] = v
	}
	created, err := p.admin.CreateRun(p.ctx, "default", run, "")
	if err != nil {
		p.t.Fatal(err)
	}
	return created.Run.PublicID
}

// task reads a task as the member plane serves it.
func (p *plane) task(run, key string) *client.TaskResponse {
	p.t.Helper()
	tk, err := p.admin.Task(p.ctx, "default", run, key)
	if err != nil {
		p.t.Fatal(err)
	}
	return tk
}

// waitTask waits until the task exists and its status is one of want.
func (p *plane) waitTask(run, key string, want ...string) *client.TaskResponse {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		tk, err := p.admin.Task(p.ctx, "default", run, key)
		if err == nil {
			last = tk.Task.Status
			for _, w := range want {
				if tk.Task.Status == w {
					return tk
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("task %s of %s: status %q, want %v", key, run, last, want)
	return nil
}

// waitRunStatus waits for a run status.
func (p *plane) waitRunStatus(run string, want string) *client.Run {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last *client.RunResponse
	for time.Now().Before(deadline) {
		r, err := p.admin.Run(p.ctx, "default", run)
		if err != nil {
			p.t.Fatal(err)
		}
		last = r
		if r.Run.Status == want {
			return &r.Run
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("run %s: %s, want %s", run, last.Raw, want)
	return nil
}

// inboxRow waits until the executor's inbox lists the row and returns it.
func (p *plane) inboxRow(e *executor, run, key string) client.WorkRow {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		in, err := e.c.WorkInbox(p.ctx, "", 0)
		if err != nil {
			p.t.Fatal(err)
		}
		for _, r := range in.Tasks {
			if r.RunPublicID == run && r.TaskKey == key {
				return r
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("inbox never listed %s/%s", run, key)
	return client.WorkRow{}
}

// inboxKeys lists the keys of the executor's inbox rows of one run.
func (p *plane) inboxKeys(e *executor, run string) []string {
	p.t.Helper()
	in, err := e.c.WorkInbox(p.ctx, "", 0)
	if err != nil {
		p.t.Fatal(err)
	}
	var keys []string
	for _, r := range in.Tasks {
		if r.RunPublicID == run {
			keys = append(keys, r.TaskKey)
		}
	}
	return keys
}

func (p *plane) claim(e *executor, run, key string) *client.ClaimResponse {
	p.t.Helper()
	c, err := e.c.ClaimWork(p.ctx, run, key)
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

func (p *plane) commit(e *executor, run, key, token string, r *client.Result) *client.CommitResponse {
	p.t.Helper()
	c, err := e.c.Commit(p.ctx, run, key, token, r)
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// wantCode checks err is a refusal with this status and code.
func wantCode(t *testing.T, err error, status int, code string) *client.Error {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != status || ce.Code != code {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
	return ce
}

// events is an executor's event stream read in the background.
type events struct {
	ch     chan *client.Event
	stream *client.EventStream
}

func (p *plane) events(e *executor) *events {
	p.t.Helper()
	st, err := e.c.Events(p.ctx)
	if err != nil {
		p.t.Fatal(err)
	}
	ev := &events{ch: make(chan *client.Event, 64), stream: st}
	go func() {
		defer close(ev.ch)
		for {
			x, err := st.Next()
			if err != nil {
				return
			}
			ev.ch <- x
		}
	}()
	p.t.Cleanup(func() { _ = st.Close() })
	return ev
}

// next waits for the next event.
func (ev *events) next(t *testing.T) *client.Event {
	t.Helper()
	select {
	case x, ok := <-ev.ch:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return x
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20 s")
	}
	return nil
}

// quiet checks that no event arrives for a moment.
func (ev *events) quiet(t *testing.T) {
	t.Helper()
	select {
	case x, ok := <-ev.ch:
		if ok {
			t.Fatalf("unexpected event %s %s", x.Type, x.Data)
		}
	case <-time.After(300 * time.Millisecond):
	}
}

// sealedEntries reads a round's sealed request entries.
func (p *plane) sealedEntries(run, key string) []json.RawMessage {
	p.t.Helper()
	req, err := p.admin.SealedRequest(p.ctx, "default", run, key)
	if err != nil {
		p.t.Fatal(err)
	}
	var sealed struct {
		Request struct {
			Entries []json.RawMessage `json:"entries"`
		} `json:"request"`
	}
	if err := json.Unmarshal(req, &sealed); err != nil {
		p.t.Fatal(err)
	}
	return sealed.Request.Entries
}

// raw sends a request with a token and a verbatim body and returns the status, headers and body.
func (p *plane) raw(method, path, token string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	p.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, p.srv.URL+path, r)
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// errorCode reads the code of an error body.
func errorCode(b []byte) string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &env)
	return env.Error.Code
}

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 4000)...)

func (p *plane) capture(e *executor, name string, data []byte) *client.UploadResponse {
	p.t.Helper()
	up, err := e.c.StageCapture(p.ctx, name, bytes.NewReader(data))
	if err != nil {
		p.t.Fatal(err)
	}
	return up
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
