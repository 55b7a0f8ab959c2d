package plugins

import "time"

// Timings are the supervisor's clocks (docs/plugins.md#crashes). Zero fields take the defaults;
// tests shorten them.
type Timings struct {
	// ExitCheck is how often the supervisor checks that the process still runs.
	ExitCheck time.Duration
	// PingTimeout bounds one health ping.
	PingTimeout time.Duration
	// PingFailures consecutive failed pings mark an instance dead.
	PingFailures int
	// BackoffBase is the first restart delay; each failure doubles it up to BackoffMax.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// BackoffResetAfter of ready service resets the delay to BackoffBase.
	BackoffResetAfter time.Duration
	// Jitter spreads each delay by ±this fraction, so plugins sharing a cause do not restart
	// in lockstep.
	Jitter float64
	// BreakerThreshold failures within BreakerWindow open the circuit breaker.
	BreakerThreshold int
	BreakerWindow    time.Duration
	// BreakerCooldown is how long an open breaker allows no start; a failed trial doubles it
	// up to BreakerMaxCooldown.
	BreakerCooldown    time.Duration
	BreakerMaxCooldown time.Duration
	// InboxPoll is the claim loop's timer: the inbox is level-triggered, so a lost event costs
	// at most this much latency.
	InboxPoll time.Duration
	// DrainTimeout is what in-flight calls get when an instance is drained on reload.
	DrainTimeout time.Duration
	// ShutdownGrace is what in-flight calls get when the host shuts down.
	ShutdownGrace time.Duration
	// MaxAttempts bounds the runs of one replayable call across crashes and lost answers.
	MaxAttempts int
	// ReannounceSpacing is the least time between two re-announcements of one plugin.
	ReannounceSpacing time.Duration
	// RootRecheck is how often a plugin held unready by another instance's root reads the
	// roots again (StorageGuard).
	RootRecheck time.Duration
}

// DefaultTimings are the values (docs/plugins.md#crashes).
var DefaultTimings = Timings{
	ExitCheck:          time.Second,
	PingTimeout:        2 * time.Second,
	PingFailures:       3,
	BackoffBase:        time.Second,
	BackoffMax:         time.Minute,
	BackoffResetAfter:  5 * time.Minute,
	Jitter:             0.2,
	BreakerThreshold:   5,
	BreakerWindow:      10 * time.Minute,
	BreakerCooldown:    10 * time.Minute,
	BreakerMaxCooldown: time.Hour,
	InboxPoll:          30 * time.Second,
	DrainTimeout:       30 * time.Second,
	ShutdownGrace:      10 * time.Second,
	MaxAttempts:        3,
	ReannounceSpacing:  DefaultReannounceSpacing,
	// One indexed read every five seconds costs the store nothing, and a held plugin loads
	// within seconds of the other root's last instance leaving.
	RootRecheck: 5 * time.Second,
}

// withDefaults fills zero fields from DefaultTimings.
func (t Timings) withDefaults() Timings {
	d := DefaultTimings
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	out := Timings{
		ExitCheck: pick(t.ExitCheck, d.ExitCheck), PingTimeout: pick(t.PingTimeout, d.PingTimeout),
		BackoffBase: pick(t.BackoffBase, d.BackoffBase), BackoffMax: pick(t.BackoffMax, d.BackoffMax),
		BackoffResetAfter: pick(t.BackoffResetAfter, d.BackoffResetAfter),
		BreakerWindow:     pick(t.BreakerWindow, d.BreakerWindow), BreakerCooldown: pick(t.BreakerCooldown, d.BreakerCooldown),
		BreakerMaxCooldown: pick(t.BreakerMaxCooldown, d.BreakerMaxCooldown), InboxPoll: pick(t.InboxPoll, d.InboxPoll),
		DrainTimeout: pick(t.DrainTimeout, d.DrainTimeout), ShutdownGrace: pick(t.ShutdownGrace, d.ShutdownGrace),
		ReannounceSpacing: pick(t.ReannounceSpacing, d.ReannounceSpacing), RootRecheck: pick(t.RootRecheck, d.RootRecheck),
		PingFailures: t.PingFailures, BreakerThreshold: t.BreakerThreshold, MaxAttempts: t.MaxAttempts, Jitter: t.Jitter,
	}
	if out.PingFailures <= 0 {
		out.PingFailures = d.PingFailures
	}
	if out.BreakerThreshold <= 0 {
		out.BreakerThreshold = d.BreakerThreshold
	}
	if out.MaxAttempts <= 0 {
		out.MaxAttempts = d.MaxAttempts
	}
	if out.Jitter <= 0 {
		out.Jitter = d.Jitter
	}
	return out
}
