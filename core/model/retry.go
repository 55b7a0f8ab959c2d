package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
)

// Retry bounds (docs/providers.md, retries).
const (
	// backoffBase and backoffCap: without a Retry-After the waits are 1 s, 2 s, 4 s, … capped at
	// 30 s, each drawn between half and all of that value, which spreads the retries of several
	// workers.
	backoffBase = time.Second
	backoffCap  = 30 * time.Second
	// MinAttemptTime is the shortest attempt worth making: a retry that cannot finish before the
	// claim's deadline only wastes a request.
	MinAttemptTime = 5 * time.Second
	// MaxDetailBytes bounds an error detail: enough to explain, never a flood.
	MaxDetailBytes = 512
)

// Clock is the retry decorator's time: Now, and a wait that ends early when ctx ends.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends, in which case it returns ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is a Clock on a time source (nil: time.Now) that waits in real time.
type SystemClock struct{ NowFunc func() time.Time }

// Now reads the time source.
func (c SystemClock) Now() time.Time {
	if c.NowFunc != nil {
		return c.NowFunc()
	}
	return time.Now()
}

// Sleep waits d in real time, or until ctx ends.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryPolicy is a provider block's retry settings.
type RetryPolicy struct {
	MaxAttempts int           // HTTP attempts per model call, the first included
	MaxWait     time.Duration // the longest wait the provider may ask for
}

// RetryPolicied is implemented by providers whose block sets a retry policy; others get the
// defaults.
type RetryPolicied interface{ RetryPolicy() RetryPolicy }

// RetryOption adjusts WithRetry.
type RetryOption func(*retrying)

// RetryLog sends the decorator's lines (a retry's wait and why, a give-up) to log.
func RetryLog(log hclog.Logger) RetryOption { return func(r *retrying) { r.log = log } }

// WithRetry wraps a provider in the retry decorator: a *Error with Retryable set is retried up to
// the policy's attempts, waiting what the provider asked for (Retry-After) or an exponential
// backoff, never a wait longer than the policy's MaxWait and never past ctx's deadline less
// MinAttemptTime. Every attempt sends the same request value; nothing is re-sealed. The final
// error keeps its key and Retryable, and its detail ends with "; gave up after N attempts over
// T s".
func WithRetry(p Provider, clock Clock, rnd *rand.Rand, opts ...RetryOption) Provider {
	if clock == nil {
		clock = SystemClock{}
	}
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	r := &retrying{next: p, clock: clock, rnd: rnd, policy: RetryPolicy{MaxAttempts: DefaultMaxAttempts, MaxWait: DefaultRetryMaxWait}}
	if rp, ok := p.(RetryPolicied); ok {
		r.policy = rp.RetryPolicy()
	}
	for _, o := range opts {
		o(r)
	}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	return r
}

type retrying struct {
	next   Provider
	clock  Clock
	policy RetryPolicy
	log    hclog.Logger
	mu     sync.Mutex // guards rnd, which is not safe for concurrent use
	rnd    *rand.Rand
}

func (r *retrying) Name() string { return r.next.Name() }

// Capabilities are the decorated provider's: retries change nothing of its wire.
func (r *retrying) Capabilities() ProviderCapabilities { return r.next.Capabilities() }

// Unwrap returns the decorated provider.
func (r *retrying) Unwrap() Provider { return r.next }

// attemptKey carries the HTTP attempt number to the adapter's log line.
type attemptKey struct{}

// AttemptOf is the attempt number the retry decorator put in ctx (1 when there is none).
func AttemptOf(ctx context.Context) int {
	if n, ok := ctx.Value(attemptKey{}).(int); ok {
		return n
	}
	return 1
}

// Preparer is a provider that builds its request body once per model call (Prepare) and sends it
// in every attempt (Send), so that retries resend the same bytes without reading attachments
// again. Complete is Prepare then Send.
type Preparer interface {
	Prepare(ctx context.Context, req *Request) (any, error)
	Send(ctx context.Context, req *Request, prepared any) (*Response, error)
}

func (r *retrying) Complete(ctx context.Context, req *Request) (*Response, error) {
	send := r.next.Complete
	if pr, ok := r.next.(Preparer); ok {
		prepared, err := pr.Prepare(ctx, req)
		if err != nil {
			return nil, err
		}
		send = func(ctx context.Context, req *Request) (*Response, error) { return pr.Send(ctx, req, prepared) }
	}
	resp, err := send(ctx, req)
	var me *Error
	if err == nil || !errors.As(err, &me) || !me.Retryable {
		return resp, err
	}
	return r.retry(ctx, req, me, send)
}

// retry is the slow path, entered after a first attempt failed retryably.
func (r *retrying) retry(ctx context.Context, req *Request, last *Error, send func(context.Context, *Request) (*Response, error)) (*Response, error) {
	start := r.clock.Now()
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt >= r.policy.MaxAttempts {
			return nil, r.giveUp(last, "", attempt, start)
		}
		wait := last.RetryAfter
		why := "the provider asked for it"
		if wait <= 0 {
			wait = r.backoff(attempt)
			why = "backoff"
		} else if wait > r.policy.MaxWait {
			return nil, r.giveUp(last, fmt.Sprintf("the provider asked to wait %s, more than retry_max_wait (%s)", seconds(wait), seconds(r.policy.MaxWait)), attempt, start)
		}
		if deadline, ok := ctx.Deadline(); ok && r.clock.Now().Add(wait+MinAttemptTime).After(deadline) {
			return nil, r.giveUp(last, fmt.Sprintf("a wait of %s would leave no time before the model task's deadline", seconds(wait)), attempt, start)
		}
		r.log.Info("model call retry", "ref", req.Ref, "run", req.Run, "task", req.TaskKey, "attempt", attempt,
			"error", last.Key, "status", last.Status, "wait", wait, "why", why)
		if err := r.clock.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		resp, err := send(context.WithValue(ctx, attemptKey{}, attempt+1), req)
		var me *Error
		if err == nil || !errors.As(err, &me) || !me.Retryable {
			return resp, err
		}
		last = me
	}
}

// backoff is the wait before retry n (1-based) when the provider asked for none.
func (r *retrying) backoff(n int) time.Duration {
	d := backoffBase << (n - 1)
	if d > backoffCap || d <= 0 {
		d = backoffCap
	}
	r.mu.Lock()
	f := r.rnd.Float64()
	r.mu.Unlock()
	return d/2 + time.Duration(f*float64(d/2))
}

func (r *retrying) giveUp(last *Error, why string, attempts int, start time.Time) *Error {
	out := *last
	suffix := ""
	if why != "" {
		suffix = "; " + why
	}
	plural := "s"
	if attempts == 1 {
		plural = ""
	}
	suffix += fmt.Sprintf("; gave up after %d attempt%s over %d s", attempts, plural, int64(r.clock.Now().Sub(start).Round(time.Second)/time.Second))
	out.Detail = ClipDetail(last.Detail, MaxDetailBytes-len(suffix)) + suffix
	r.log.Warn("model call gave up", "error", out.Key, "status", out.Status, "attempts", attempts)
	return &out
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%d s", int64(d.Round(time.Second)/time.Second))
}

// ClipDetail cuts s to at most n bytes on a UTF-8 boundary.
func ClipDetail(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
