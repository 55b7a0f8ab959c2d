package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// sseClient is one open event stream read frame by frame (a frame ends with a blank line).
type sseClient struct {
	resp   *http.Response
	frames chan string
	cancel context.CancelFunc
}

func openStream(t *testing.T, url, token string, hdr map[string]string) (*sseClient, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/agent_api/v1/executor/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		return nil, resp
	}
	c := &sseClient{resp: resp, frames: make(chan string, 64), cancel: cancel}
	go func() {
		defer close(c.frames)
		br := bufio.NewReader(resp.Body)
		var frame strings.Builder
		for {
			line, err := br.ReadString('\n')
			frame.WriteString(line)
			if err != nil {
				return
			}
			if line == "\n" {
				c.frames <- frame.String()
				frame.Reset()
			}
		}
	}()
	t.Cleanup(c.close)
	return c, resp
}

func (c *sseClient) close() {
	c.cancel()
	_ = c.resp.Body.Close()
}

// next returns the next frame, skipping pings unless wantPing.
func (c *sseClient) next(t *testing.T, skipPings bool) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				t.Fatal("the stream ended")
			}
			if skipPings && f == ": ping\n\n" {
				continue
			}
			return f
		case <-timeout:
			t.Fatal("no frame within 10 s")
		}
	}
}

// ended waits for the stream to end.
func (c *sseClient) ended(t *testing.T) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-c.frames:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream did not end within 10 s")
		}
	}
}

func TestEventStreamFrames(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		srv := httptest.NewServer(f.api)
		t.Cleanup(srv.Close)
		id, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		// Last-Event-ID is accepted and ignored: the stream opens normally, ids start at 1.
		c, resp := openStream(t, srv.URL, tok, map[string]string{"Last-Event-ID": "17"})
		if c == nil {
			t.Fatalf("open: status %d", resp.StatusCode)
		}
		for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store"} {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		if got, want := c.next(t, false)+c.next(t, false), "retry: 3000\n\n: connected "+id+"\n\n"; got != want {
			t.Fatalf("opening frames %q, want %q", got, want)
		}
		f.push.WorkAvailable("3f0e0000-0000-7000-8000-000000000001", "r2t0", "screenshot", []string{id})
		f.push.WorkCanceled("3f0e0000-0000-7000-8000-000000000001", "r2t0", []string{id}, executors.ReasonRunCanceled)
		want := []string{
			"id: 1\nevent: work_available\n" +
				`data: {"type":"work_available","kind":"tool_call","run_public_id":"3f0e0000-0000-7000-8000-000000000001","task_key":"r2t0","tool_name":"screenshot"}` + "\n\n",
			"id: 2\nevent: work_canceled\n" +
				`data: {"type":"work_canceled","run_public_id":"3f0e0000-0000-7000-8000-000000000001","task_key":"r2t0","reason":"run_canceled"}` + "\n\n",
		}
		for i, w := range want {
			if got := c.next(t, true); got != w {
				t.Fatalf("frame %d:\n got %q\nwant %q", i, got, w)
			}
		}
		// A ": ping" comment arrives every ping interval.
		start := time.Now()
		for i := 0; i < 2; i++ {
			if got := c.next(t, false); got != ": ping\n\n" {
				t.Fatalf("got %q, want a ping", got)
			}
		}
		if d := time.Since(start); d > 5*testPingInterval {
			t.Fatalf("two pings took %v at a %v interval", d, testPingInterval)
		}
		// An event of a type this version does not send is skipped without using an id.
		if err := f.push.Publish(context.Background(), []string{id}, executors.Event{Type: "something_else"}); err != nil {
			t.Fatal(err)
		}
		f.push.WorkCanceled("r", "k", []string{id}, executors.ReasonExpired)
		if got := c.next(t, true); !strings.HasPrefix(got, "id: 3\nevent: work_canceled\n") {
			t.Fatalf("after a skipped event: %q", got)
		}
	})
}

func TestEventStreamRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		srv := httptest.NewServer(f.api)
		t.Cleanup(srv.Close)
		_, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		_, other := f.newExecutor(t, f.admin, "default", "runner", "desktop")
		// Member tokens, and no token: 401.
		for _, member := range []string{f.admin, f.agent, ""} {
			_, resp := openStream(t, srv.URL, member, nil)
			wantError(t, resp, 401, "unauthorized")
		}
		var open []*sseClient
		for i := 0; i < executors.MaxStreams; i++ {
			c, resp := openStream(t, srv.URL, tok, nil)
			if c == nil {
				t.Fatalf("stream %d: status %d", i+1, resp.StatusCode)
			}
			c.next(t, false)
			open = append(open, c)
		}
		_, resp := openStream(t, srv.URL, tok, nil)
		wantError(t, resp, 429, "rate_limited")
		if resp.Header.Get("Retry-After") != "3" {
			t.Fatalf("Retry-After = %q, want 3", resp.Header.Get("Retry-After"))
		}
		// Another executor is not limited by this one's streams.
		if c, resp := openStream(t, srv.URL, other, nil); c == nil {
			t.Fatalf("another executor's stream: %d", resp.StatusCode)
		}
		// A stream the client closes gives its slot back.
		open[0].close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, resp := openStream(t, srv.URL, tok, nil)
			if c != nil {
				break
			}
			wantError(t, resp, 429, "rate_limited")
			if time.Now().After(deadline) {
				t.Fatal("the closed stream's slot never came back")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestRevocationClosesEventStreams: revoking an executor ends its open streams, and its token
// can open no new one.
func TestRevocationClosesEventStreams(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		srv := httptest.NewServer(f.api)
		t.Cleanup(srv.Close)
		id, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		_, otherTok := f.newExecutor(t, f.admin, "default", "runner", "desktop")
		a, _ := openStream(t, srv.URL, tok, nil)
		b, _ := openStream(t, srv.URL, tok, nil)
		o, _ := openStream(t, srv.URL, otherTok, nil)
		for _, c := range []*sseClient{a, b, o} {
			c.next(t, false)
		}
		f.must(t, 200, "DELETE", "/agent_api/v1/executors/"+id, f.admin, nil)
		a.ended(t)
		b.ended(t)
		_, resp := openStream(t, srv.URL, tok, nil)
		wantError(t, resp, 401, "unauthorized")
		// The other executor's stream is still open and hears its events.
		o.next(t, true) // its connected line
		f.push.WorkAvailable("r", "k", "t", []string{obj(t, f.must(t, 200, "GET", "/agent_api/v1/executor", otherTok, nil), "executor")["public_id"].(string)})
		if got := o.next(t, true); !strings.HasPrefix(got, "id: 1\nevent: work_available\n") {
			t.Fatalf("the other stream: %q", got)
		}
	})
}

// TestStreamPresence: member discovery shows an executor online with connected_at while a stream
// is open, and connected_at null once it closed.
func TestStreamPresence(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		srv := httptest.NewServer(f.api)
		t.Cleanup(srv.Close)
		id, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		read := func() map[string]any {
			return obj(t, f.must(t, 200, "GET", "/agent_api/v1/executors/"+id, f.admin, nil), "executor")
		}
		if e := read(); e["presence"] != "not_yet_seen" || e["connected_at"] != nil {
			t.Fatalf("before any request: %v", e)
		}
		c, _ := openStream(t, srv.URL, tok, nil)
		c.next(t, false)
		now := f.now.UTC().Format(store.TimeLayout)
		if e := read(); e["presence"] != "online" || e["connected_at"] != now || e["last_seen_at"] != now {
			t.Fatalf("with a stream open: %v", e)
		}
		// A connected_at whose holder stopped refreshing last_seen_at (an instance that died with
		// its streams) is not shown once the executor reads offline.
		f.advance(31 * time.Second)
		if e := read(); e["presence"] != "offline" || e["connected_at"] != nil {
			t.Fatalf("a stale stream: %v", e)
		}
		f.advance(-31 * time.Second)
		c.close()
		deadline := time.Now().Add(10 * time.Second)
		for read()["connected_at"] != nil {
			if time.Now().After(deadline) {
				t.Fatalf("connected_at stayed after the stream closed: %v", read())
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Out of the online window the executor reads offline.
		f.advance(31 * time.Second)
		if e := read(); e["presence"] != "offline" {
			t.Fatalf("31 s later: %v", e)
		}
	})
}

// TestShutdownEndsStreams: closing the hub's streams (what the server does when it shuts down)
// ends every open stream, so that draining does not wait for them.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	srv := httptest.NewServer(f.api)
	t.Cleanup(srv.Close)
	_, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
	c, _ := openStream(t, srv.URL, tok, nil)
	c.next(t, false)
	f.push.CloseStreams()
	c.ended(t)
	_, resp := openStream(t, srv.URL, tok, nil)
	wantError(t, resp, 503, "unavailable")
	_, _ = io.Copy(io.Discard, resp.Body)
}

// TestSlowStreamIsClosed: a stream whose client stops reading is neither waited for nor skipped
// silently: once it falls executors.StreamBuffer events behind what its writer and the sockets
// took, the stream ends after the last frame it sent, the publisher never blocks, and the
// client reconnects to a fresh stream (ids from 1) and reads its inbox.
func TestSlowStreamIsClosed(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	f := newFixture(t, s)
	srv := httptest.NewServer(f.api)
	t.Cleanup(srv.Close)
	id, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
	ex, err := store.ExecutorByPublicID(context.Background(), s.Reader(), id)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := openStream(t, srv.URL, tok, nil)
	c.next(t, false)
	c.next(t, false)
	// The client reads nothing more: its reader's channel fills, then the sockets, then the
	// hub's buffer. Publish until the hub has closed the stream.
	published := 0
	deadline := time.Now().Add(60 * time.Second)
	for f.push.Streams(ex.ID) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the stream was still open after %d unread events", published)
		}
		for range 1000 {
			f.push.WorkAvailable("3f0e0000-0000-7000-8000-000000000001", "r2t0", "screenshot", []string{id})
		}
		published += 1000
	}
	last := ""
	for frame := range c.frames {
		if frame != ": ping\n\n" {
			last = frame
		}
	}
	// The stream may end before its writer sent any of them: the burst outran it at once.
	lastID := 0
	if last != "" {
		if _, err := fmt.Sscanf(last, "id: %d\n", &lastID); err != nil {
			t.Fatalf("the last frame %q", last)
		}
	}
	if lastID >= published {
		t.Fatalf("the stream ended at id %d after %d published: nothing was dropped", lastID, published)
	}
	again, _ := openStream(t, srv.URL, tok, nil)
	if got := again.next(t, false); got != "retry: 3000\n\n" {
		t.Fatalf("the reconnect opened with %q", got)
	}
	again.next(t, false)
	f.push.WorkAvailable("r", "r3t0", "screenshot", []string{id})
	if got := again.next(t, true); !strings.HasPrefix(got, "id: 1\nevent: work_available\n") {
		t.Fatalf("the reconnected stream: %q", got)
	}
}
