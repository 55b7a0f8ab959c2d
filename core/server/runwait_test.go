package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// serveFor serves srv on a fresh listener and answers an admin client, the address, the admin's
// token and the function that shuts the server down and reports what Serve returned; the test's
// cleanup shuts it down if the test did not.
func serveFor(t *testing.T, srv *Server, s Settings) (c *client.Client, addr, token string, stop func() error) {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(s.DataDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var served error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			served = <-done
		}
		return served
	}
	t.Cleanup(func() { _ = stop() })
	token = strings.TrimSpace(string(tok))
	return client.New("http://"+ln.Addr().String(), token), ln.Addr().String(), token, stop
}

// sleepyRun is a standalone run whose one round sleeps ms before it answers.
func sleepyRun(ms int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsleep %d\nsay done"}}]}`, ms))
}

// TestWaitingRunRead: a read with wait answers when the run leaves running, a plain read answers
// at once, and a wait that passes answers the run as it is.
func TestWaitingRunRead(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			srv, s := openServer(t, d, Options{})
			c, _, _, _ := serveFor(t, srv, s)
			ctx := context.Background()
			created, err := c.CreateRun(ctx, "default", sleepyRun(300), "")
			if err != nil {
				t.Fatal(err)
			}
			id := created.Run.PublicID
			if got, err := c.Run(ctx, "default", id); err != nil || got.Run.Status != "running" {
				t.Fatalf("plain read = %+v, %v; want running at once", got, err)
			}
			got, err := c.WaitRun(ctx, "default", id, 30)
			if err != nil || got.Run.Status != "completed" || got.Run.Answer == nil || *got.Run.Answer != "done" {
				t.Fatalf("waiting read = %+v, %v; want completed with its answer", got, err)
			}
			if n := srv.runWatch.Waiting(id); n != 0 {
				t.Fatalf("%d reads still registered after answering", n)
			}
			long, err := c.CreateRun(ctx, "default", sleepyRun(60000), "")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got, err = c.WaitRun(ctx, "default", long.Run.PublicID, 1)
			if err != nil || got.Run.Status != "running" || time.Since(start) < time.Second {
				t.Fatalf("waiting read of a busy run = %+v, %v after %v; want running after a second", got, err, time.Since(start))
			}
		})
	}
}

// TestShutdownAnswersWaitingReads: shutting down answers a waiting read with the run as it is,
// so the drain does not wait out the read's wait.
func TestShutdownAnswersWaitingReads(t *testing.T) {
	t.Parallel()
	srv, s := openServer(t, storetest.Dialects()[0], Options{DrainTimeout: 5 * time.Second})
	c, _, _, stop := serveFor(t, srv, s)
	ctx := context.Background()
	created, err := c.CreateRun(ctx, "default", sleepyRun(60000), "")
	if err != nil {
		t.Fatal(err)
	}
	id := created.Run.PublicID
	type answer struct {
		r   *client.RunResponse
		err error
	}
	got := make(chan answer, 1)
	go func() {
		r, err := c.WaitRun(ctx, "default", id, 30)
		got <- answer{r, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); srv.runWatch.Waiting(id) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the read never began to wait")
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("Serve = %v, want a drain that ends", err)
	}
	a := <-got
	if a.err != nil || a.r.Run.Status != "running" {
		t.Fatalf("waiting read at shutdown = %+v, %v; want the run as it is", a.r, a.err)
	}
}
