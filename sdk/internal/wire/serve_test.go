package wire

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
)

func TestInterceptorRecoversPanics(t *testing.T) {
	t.Parallel()
	calls := NewCalls(hclog.NewNullLogger())
	resp, err := calls.Interceptor(context.Background(), nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) {
		panic("handler bug")
	})
	r := FromStatus(err)
	if resp != nil || !r.Typed || r.Kind != pb.ErrorKind_ERROR_KIND_INTERNAL {
		t.Fatalf("panic answered %v, %+v", resp, r)
	}
}

func TestCallsCancel(t *testing.T) {
	t.Parallel()
	calls := NewCalls(hclog.NewNullLogger())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := calls.Interceptor(context.Background(), nil, &grpc.UnaryServerInfo{}, func(ctx context.Context, _ any) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		done <- err
	}()
	<-started
	begin := time.Now()
	calls.Cancel(5 * time.Second)
	if err := <-done; err == nil {
		t.Error("the handler was not cancelled")
	}
	if time.Since(begin) > 2*time.Second {
		t.Error("Cancel waited past the handler's return")
	}
	// A handler that ignores its context is given up on after the grace.
	calls2 := NewCalls(hclog.NewNullLogger())
	block := make(chan struct{})
	defer close(block)
	go func() {
		_, _ = calls2.Interceptor(context.Background(), nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) {
			<-block
			return nil, nil
		})
	}()
	time.Sleep(20 * time.Millisecond)
	begin = time.Now()
	calls2.Cancel(50 * time.Millisecond)
	if d := time.Since(begin); d < 50*time.Millisecond || d > time.Second {
		t.Errorf("Cancel took %v with a 50ms grace", d)
	}
}

func TestWatchParent(t *testing.T) {
	t.Parallel()
	var ppid atomic.Int64
	ppid.Store(100)
	orphaned := make(chan struct{})
	go WatchParent(context.Background(), func() int { return int(ppid.Load()) }, time.Millisecond, func() { close(orphaned) })
	select {
	case <-orphaned:
		t.Fatal("orphaned while the parent lives")
	case <-time.After(20 * time.Millisecond):
	}
	ppid.Store(1) // reparented to init: the host is gone
	select {
	case <-orphaned:
	case <-time.After(5 * time.Second):
		t.Fatal("not orphaned after the parent changed")
	}
	// The watchdog stops with its context.
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		WatchParent(ctx, func() int { return 1 }, time.Millisecond, func() { t.Error("orphaned after stop") })
		close(stopped)
	}()
	cancel()
	<-stopped
}

// fakeStream is a server stream with only a context.
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s fakeStream) Context() context.Context { return s.ctx }

// TestStreamInterceptor: a streaming handler (WatchAnnouncement) is cancelled with the other
// calls, and its panic is an INTERNAL status, not a dead plugin.
func TestStreamInterceptor(t *testing.T) {
	t.Parallel()
	calls := NewCalls(hclog.NewNullLogger())
	err := calls.StreamInterceptor(nil, fakeStream{ctx: context.Background()}, &grpc.StreamServerInfo{}, func(any, grpc.ServerStream) error {
		panic("stream bug")
	})
	if r := FromStatus(err); !r.Typed || r.Kind != pb.ErrorKind_ERROR_KIND_INTERNAL {
		t.Fatalf("a stream's panic answered %+v", r)
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- calls.StreamInterceptor(nil, fakeStream{ctx: context.Background()}, &grpc.StreamServerInfo{}, func(_ any, ss grpc.ServerStream) error {
			close(started)
			<-ss.Context().Done()
			return ss.Context().Err()
		})
	}()
	<-started
	calls.Cancel(5 * time.Second)
	select {
	case err := <-done:
		if err == nil {
			t.Error("the stream ended without its context's error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Cancel did not end the stream")
	}
}

// TestFinisher: before the process exits, handlers are cancelled first, then beforeExit runs,
// once, however many paths reach the exit.
func TestFinisher(t *testing.T) {
	t.Parallel()
	calls := NewCalls(hclog.NewNullLogger())
	started, handlerDone := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = calls.Interceptor(context.Background(), nil, &grpc.UnaryServerInfo{}, func(ctx context.Context, _ any) (any, error) {
			close(started)
			<-ctx.Done()
			close(handlerDone)
			return nil, ctx.Err()
		})
	}()
	<-started
	var ran atomic.Int32
	f := NewFinisher(calls, 5*time.Second, func() {
		select {
		case <-handlerDone:
		default:
			t.Error("beforeExit ran before the handlers were cancelled")
		}
		ran.Add(1)
	})
	f.Finish()
	f.Finish()
	if ran.Load() != 1 {
		t.Errorf("beforeExit ran %d times", ran.Load())
	}
	NewFinisher(NewCalls(hclog.NewNullLogger()), time.Millisecond, nil).Finish() // nothing to run
}
