package plugins

import (
	"math/rand/v2"
	"time"
)

// Breaker states, as the status shows them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// breaker counts failures (crashes, failed starts, health kills) and spaces restarts: an
// exponential backoff, and a circuit that opens after repeated failures (docs/plugins.md#crashes).
type breaker struct {
	t         Timings
	failures  []time.Time // within the window
	streak    int         // consecutive failures since the last long-enough ready spell
	openUntil time.Time
	cooldown  time.Duration
	halfOpen  bool
}

func newBreaker(t Timings) breaker { return breaker{t: t, cooldown: t.BreakerCooldown} }

// failure records one failure at now and reports whether it opened the breaker.
func (b *breaker) failure(now time.Time) (opened bool) {
	b.streak++
	if b.halfOpen {
		// A failed trial reopens with the cooldown doubled.
		b.halfOpen = false
		b.cooldown = min(2*b.cooldown, b.t.BreakerMaxCooldown)
		b.openUntil = now.Add(b.cooldown)
		return true
	}
	cut := now.Add(-b.t.BreakerWindow)
	kept := b.failures[:0]
	for _, f := range b.failures {
		if f.After(cut) {
			kept = append(kept, f)
		}
	}
	b.failures = append(kept, now)
	if len(b.failures) >= b.t.BreakerThreshold {
		b.openUntil = now.Add(b.cooldown)
		b.failures = nil
		return true
	}
	return false
}

// ready records a successful start; a trial start closes the breaker.
func (b *breaker) ready() (closed bool) {
	if b.halfOpen {
		b.halfOpen = false
		b.cooldown = b.t.BreakerCooldown
		return true
	}
	return false
}

// servedLong resets the backoff after a long enough ready spell.
func (b *breaker) servedLong() { b.streak = 0 }

// reset closes the breaker and resets the backoff: a reload, a changed entry, a restart.
func (b *breaker) reset() {
	*b = newBreaker(b.t)
}

// open reports whether no start is allowed at now; once the cooldown passes, the next start is
// the half-open trial.
func (b *breaker) open(now time.Time) bool {
	if b.openUntil.IsZero() {
		return false
	}
	if now.Before(b.openUntil) {
		return true
	}
	b.openUntil = time.Time{}
	b.halfOpen = true
	return false
}

// state is the breaker's status word.
func (b *breaker) state(now time.Time) string {
	switch {
	case !b.openUntil.IsZero() && now.Before(b.openUntil):
		return BreakerOpen
	case b.halfOpen || !b.openUntil.IsZero():
		return BreakerHalfOpen
	}
	return BreakerClosed
}

// delay is the next restart delay: BackoffBase doubled per consecutive failure, capped, with
// jitter.
func (b *breaker) delay() time.Duration {
	d := b.t.BackoffBase
	for i := 1; i < b.streak && d < b.t.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, b.t.BackoffMax)
	spread := 1 + b.t.Jitter*(2*rand.Float64()-1)
	return time.Duration(float64(d) * spread)
}
