package liveness_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/liveness"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// lockedBuffer is a log output the test reads while the instance writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInstanceHeartbeat: an instance is not current before it registers, is listed live and
// current once registered, and stays current while it renews; one whose timeout passed since its
// last renewal is not current. A clean stop declares an instance dead, and its next renewal says
// in the log that it had been, and lists it live again.
func TestInstanceHeartbeat(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		out := &lockedBuffer{}
		log := hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Info})
		in, err := liveness.New(s, log, "v9", time.Now, time.Second, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(in.ID(), liveness.InstanceIDPrefix) || len(in.ID()) != len(liveness.InstanceIDPrefix)+16 {
			t.Fatalf("id %q", in.ID())
		}
		if got := in.Lapse(); got != liveness.ReasonNotRegistered {
			t.Fatalf("before registering: %q", got)
		}
		if err := in.Register(ctx); err != nil {
			t.Fatal(err)
		}
		if got := in.Lapse(); got != "" {
			t.Fatalf("registered: %q", got)
		}
		live, err := store.LiveInstances(ctx, s.Reader(), 0)
		if err != nil || len(live) != 1 || live[0].ID != in.ID() || live[0].Version != "v9" {
			t.Fatalf("live: %+v %v", live, err)
		}
		// An instance whose timeout passed since its last renewal is not current.
		short, err := liveness.New(s, log, "v9", time.Now, time.Millisecond, 2*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if err := short.Register(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		if got := short.Lapse(); !strings.HasPrefix(got, liveness.ReasonHeartbeatLapsed+": last renewed ") {
			t.Fatalf("past the timeout: %q", got)
		}
		short.Leave()
		in.Beat(ctx)
		if got := in.Lapse(); got != "" {
			t.Fatalf("renewed: %q", got)
		}
		in.Leave()
		if live, _ := store.LiveInstances(ctx, s.Reader(), 0); len(live) != 0 {
			t.Fatalf("live after leaving: %+v", live)
		}
		if strings.Contains(out.String(), "had been declared dead") {
			t.Fatalf("declared dead before it was: %s", out)
		}
		in.Beat(ctx)
		if !strings.Contains(out.String(), "this instance had been declared dead") {
			t.Fatalf("the renewal after a death did not say so: %s", out)
		}
		if live, _ := store.LiveInstances(ctx, s.Reader(), 0); len(live) != 1 {
			t.Fatalf("live after coming back: %+v", live)
		}
	})
}
