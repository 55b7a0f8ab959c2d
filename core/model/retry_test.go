package model_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/model"
)

// fakeClock advances on Sleep and records every wait.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
	block bool // Sleep waits for ctx instead of advancing
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.block {
		<-ctx.Done()
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

// scripted answers its errors in turn, then text.
type scripted struct {
	errs   []error
	calls  int
	policy *model.RetryPolicy
}

func (s *scripted) Name() string { return "s" }

func (s *scripted) Capabilities() model.ProviderCapabilities { return model.ProviderCapabilities{} }
func (s *scripted) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	s.calls++
	if s.calls <= len(s.errs) {
		return nil, s.errs[s.calls-1]
	}
	return &model.Response{Text: "ok", Finish: model.FinishStop}, nil
}

type policied struct{ *scripted }

func (p policied) RetryPolicy() model.RetryPolicy { return *p.policy }

func overloaded(after time.Duration) error {
	return &model.Error{Key: model.KeyProviderOverloaded, Detail: "HTTP 529 overloaded_error: Overloaded", Retryable: true, RetryAfter: after, Status: 529}
}

func TestRetryDecorator(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(time.Hour) // the deadlines below must lie ahead in real time too
	cases := []struct {
		name     string
		errs     []error
		policy   *model.RetryPolicy
		deadline time.Duration // from start; 0: none
		calls    int
		waits    []time.Duration
		wantErr  string // "" = success
	}{
		{"first try", nil, nil, 0, 1, nil, ""},
		{"retry-after honoured", []error{overloaded(3 * time.Second)}, nil, 0, 2, []time.Duration{3 * time.Second}, ""},
		{"backoff within half and all", []error{overloaded(0), overloaded(0), overloaded(0)}, nil, 0, 4, nil, ""},
		{"exhausted", []error{overloaded(0), overloaded(0), overloaded(0), overloaded(0)}, nil, 0, 4, nil,
			"provider_overloaded: HTTP 529 overloaded_error: Overloaded; gave up after 4 attempts over "},
		{"a wait above retry_max_wait is not taken", []error{overloaded(600 * time.Second)}, nil, 0, 1, nil,
			"the provider asked to wait 600 s, more than retry_max_wait (60 s); gave up after 1 attempt over 0 s"},
		{"the deadline wins", []error{overloaded(5 * time.Second)}, nil, 8 * time.Second, 1, nil,
			"a wait of 5 s would leave no time before the model task's deadline; gave up after 1 attempt over 0 s"},
		{"max_attempts one", []error{overloaded(time.Second)}, &model.RetryPolicy{MaxAttempts: 1, MaxWait: time.Minute}, 0, 1, nil, "gave up after 1 attempt"},
		{"not retryable passes through", []error{&model.Error{Key: model.KeyProviderHTTPError, Detail: "HTTP 400"}}, nil, 0, 1, nil, "provider_http_error: HTTP 400"},
		{"plain errors pass through", []error{errors.New("boom")}, nil, 0, 1, nil, "boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{now: start}
			s := &scripted{errs: c.errs, policy: c.policy}
			var p model.Provider = s
			if c.policy != nil {
				p = policied{s}
			}
			r := model.WithRetry(p, clock, rand.New(rand.NewPCG(7, 7)))
			ctx := context.Background()
			if c.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, start.Add(c.deadline))
				defer cancel()
			}
			req := &model.Request{Ref: "s/m"}
			resp, err := r.Complete(ctx, req)
			if s.calls != c.calls {
				t.Errorf("%d calls, want %d", s.calls, c.calls)
			}
			if c.wantErr == "" {
				if err != nil || resp.Text != "ok" {
					t.Fatalf("%v %+v", err, resp)
				}
			} else if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
			if c.waits != nil && !equalWaits(clock.waits, c.waits) {
				t.Errorf("waits %v, want %v", clock.waits, c.waits)
			}
			if c.name == "backoff within half and all" {
				for i, w := range clock.waits {
					full := time.Second << i
					if w < full/2 || w > full {
						t.Errorf("wait %d is %v, outside %v..%v", i, w, full/2, full)
					}
				}
			}
			var me *model.Error
			if errors.As(err, &me) && me.Key == model.KeyProviderOverloaded && !me.Retryable {
				t.Error("the final error lost Retryable")
			}
			if errors.As(err, &me) && len(me.Detail) > model.MaxDetailBytes {
				t.Errorf("detail of %d bytes", len(me.Detail))
			}
		})
	}
}

func equalWaits(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRetryWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Now(), block: true}
	r := model.WithRetry(&scripted{errs: []error{overloaded(time.Second)}}, clock, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if _, err := r.Complete(ctx, &model.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestClipDetail(t *testing.T) {
	t.Parallel()
	if got := model.ClipDetail("héllo", 2); got != "h" {
		t.Errorf("%q", got)
	}
	if got := model.ClipDetail("abc", 5); got != "abc" {
		t.Errorf("%q", got)
	}
}
