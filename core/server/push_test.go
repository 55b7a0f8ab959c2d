package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// nextEvent reads the stream's next event within 10 seconds.
func nextEvent(t *testing.T, s *client.EventStream) (*client.Event, error) {
	t.Helper()
	type result struct {
		ev  *client.Event
		err error
	}
	ch := make(chan result, 1)
	go func() {
		ev, err := s.Next()
		ch <- result{ev, err}
	}()
	select {
	case r := <-ch:
		return r.ev, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		return nil, nil
	}
}

// newRunner creates a runner and returns its public id and token.
func newRunner(t testing.TB, in *testserver.Instance, name string) (string, string) {
	t.Helper()
	res, err := in.Client().CreateExecutor(context.Background(), &client.CreateExecutorRequest{Kind: "runner", DisplayName: name})
	if err != nil {
		t.Fatal(err)
	}
	return res.Executor.PublicID, res.Token
}

// TestTwoInstancesShareWork runs two servers on one PostgreSQL schema: a work_available
// published on one reaches an event stream held by the other; a capture staged on one is read
// on the other; member discovery on one shows the stream held by the other; revoking the
// executor on one closes its stream on the other.
func TestTwoInstancesShareWork(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // SQLite serves a single instance
		}
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			one := testserver.Start(t, testserver.Options{Dialect: d})
			two := testserver.Start(t, testserver.Options{Peer: one})
			id, tok := newRunner(t, one, "laptop")
			onOne, onTwo := one.ClientWith(tok), two.ClientWith(tok)

			stream, err := onTwo.Events(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			// Discovery on the first instance sees the stream the second holds.
			ex, err := one.Client().Executor(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if ex.Executor.Presence != "online" || ex.Executor.ConnectedAt == nil {
				t.Fatalf("discovery on the other instance: presence %q, connected_at %v", ex.Executor.Presence, ex.Executor.ConnectedAt)
			}

			one.Server().Push().WorkAvailable("3f0e0000-0000-7000-8000-000000000001", "r2t0", "screenshot", []string{id})
			ev, err := nextEvent(t, stream)
			if err != nil {
				t.Fatal(err)
			}
			if ev.ID != "1" || ev.Type != "work_available" || ev.Kind != "tool_call" || ev.TaskKey != "r2t0" || ev.ToolName != "screenshot" ||
				ev.RunPublicID != "3f0e0000-0000-7000-8000-000000000001" {
				t.Fatalf("event %+v", ev)
			}

			png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 3<<20)...)
			up, err := onOne.StageCapture(ctx, "page.png", bytes.NewReader(png))
			if err != nil {
				t.Fatal(err)
			}
			got, err := onTwo.CaptureBytes(ctx, up.Upload.PublicID, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(got.Body)
			got.Body.Close()
			if !bytes.Equal(body, png) || got.ContentType != "image/png" || got.ETag != `"`+up.Upload.SHA256+`"` {
				t.Fatalf("capture read on the other instance: %d bytes, %q, %q", len(body), got.ContentType, got.ETag)
			}

			if _, err := one.Client().RevokeExecutor(ctx, id); err != nil {
				t.Fatal(err)
			}
			if ev, err := nextEvent(t, stream); !errors.Is(err, io.EOF) {
				t.Fatalf("after revocation on the other instance: %+v, %v; want the stream closed", ev, err)
			}
		})
	}
}

// TestStopWithOpenStreams: a graceful stop does not wait for event streams, which never end by
// themselves; the stream sees its end.
func TestStopWithOpenStreams(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			in := testserver.Start(t, testserver.Options{Dialect: d})
			_, tok := newRunner(t, in, "laptop")
			stream, err := in.ClientWith(tok).Events(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			start := time.Now()
			if err := in.Stop(); err != nil {
				t.Fatalf("stop with an open stream: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("stop took %v", d)
			}
			if _, err := nextEvent(t, stream); !errors.Is(err, io.EOF) {
				t.Fatalf("the stream after stop: %v", err)
			}
		})
	}
}
