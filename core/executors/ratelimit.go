package executors

import (
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/core/refusal"
)

// limiter is a token bucket per executor on this instance: perMinute tokens refill evenly over
// a minute, and a full bucket holds a minute's worth, so a burst after a quiet minute is
// allowed while a sustained rate above the bound is not.
type limiter struct {
	perMinute float64
	now       func() time.Time
	what      string

	mu      sync.Mutex
	buckets map[int64]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// limiterPruneAt is the bucket count above which full buckets are dropped: a full bucket says
// nothing a fresh one would not, and executors come and go.
const limiterPruneAt = 1024

func newLimiter(perMinute int, now func() time.Time, what string) *limiter {
	return &limiter{perMinute: float64(perMinute), now: now, what: what, buckets: map[int64]*bucket{}}
}

// allow takes one token for the executor, or refuses 429 rate_limited with the whole seconds
// until a token is back.
func (l *limiter) allow(executorID int64) error {
	now := l.now()
	perSecond := l.perMinute / 60
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[executorID]
	if b == nil {
		if len(l.buckets) >= limiterPruneAt {
			l.pruneLocked(now)
		}
		b = &bucket{tokens: l.perMinute, at: now}
		l.buckets[executorID] = b
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = math.Min(l.perMinute, b.tokens+elapsed*perSecond)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return nil
	}
	wait := time.Duration(math.Ceil((1-b.tokens)/perSecond)) * time.Second
	if wait < time.Second {
		wait = time.Second
	}
	return &RateLimitedError{
		Refusal: refusal.Newf(refusal.TooManyRequests, CodeRateLimited,
			"An executor may make at most %d %s a minute; retry after %d s.", int(l.perMinute), l.what, int(wait/time.Second)),
		RetryAfter: wait,
	}
}

func (l *limiter) pruneLocked(now time.Time) {
	for id, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.perMinute/60 >= l.perMinute {
			delete(l.buckets, id)
		}
	}
}

// RateLimitedError is a 429 rate_limited refusal with the delay its Retry-After header names.
type RateLimitedError struct {
	Refusal    *refusal.Error
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string { return e.Refusal.Error() }
func (e *RateLimitedError) Unwrap() error { return e.Refusal }

// RetryAfterOf returns the Retry-After header value (whole seconds) of a rate_limited refusal:
// a claim or claim read over its rate, or a stream over MaxStreams.
func RetryAfterOf(err error) (string, bool) {
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return strconv.Itoa(int(rl.RetryAfter / time.Second)), true
	}
	if errors.Is(err, ErrTooManyStreams) {
		return RetryAfter(), true
	}
	return "", false
}
