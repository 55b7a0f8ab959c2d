package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/nexuskernel/nexus/core/store"
)

// Instance liveness (docs/operations.md#several-instances): every engine registers its instance in
// the store at start and renews a heartbeat; every kernel claim records the claiming instance; a
// survivor that finds another instance's heartbeat older than the timeout declares it dead and
// releases the kernel claims it held at once, by the expiry rule, as if their deadlines had passed.
const (
	// DefaultHeartbeatInterval is kernel.heartbeat_interval's default: one small write per
	// instance every two seconds costs the store nothing noticeable, and leaves room for five
	// renewals within the timeout.
	DefaultHeartbeatInterval = 2 * time.Second
	// DefaultHeartbeatTimeout is kernel.heartbeat_timeout's default: how long a survivor waits
	// before it declares a silent instance dead. Declaring a live instance dead costs its
	// in-flight model rounds a second attempt, so the timeout spans five renewals (a long
	// garbage collection, a store slow for a few seconds); a dead instance's work waits this
	// long plus one sweep, instead of its claims' deadlines (model_timeout, minutes).
	DefaultHeartbeatTimeout = 10 * time.Second
	// MinHeartbeatRenewals is how many renewals the timeout must at least span: with fewer, one
	// late renewal would declare a live instance dead.
	MinHeartbeatRenewals = 2
	// DeadInstanceRetention is how long a dead instance's row stays listed in the store after its
	// claims were released: a day, for an operator to read in the log which instance it was, and
	// for an instance that comes back to learn it was declared dead.
	DeadInstanceRetention = 24 * time.Hour
	// instanceIDBytes is the random part of an instance id: eight bytes never collide among the
	// instances of one deployment.
	instanceIDBytes = 8
)

// InstanceIDPrefix starts every instance id.
const InstanceIDPrefix = "inst_"

// instance is this engine's own registration and heartbeat state.
type instance struct {
	row store.Instance
	// beat is when the store last took a heartbeat, read on this process's own monotonic clock
	// (not the engine's clock, which a test may move): nil before the first.
	beat atomic.Pointer[time.Time]
}

// took records a heartbeat the store took just now.
func (in *instance) took() {
	now := time.Now()
	in.beat.Store(&now)
}

func newInstance(version string, now time.Time) (*instance, error) {
	var b [instanceIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("runs: instance id: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	if version == "" {
		version = "dev"
	}
	return &instance{row: store.Instance{ID: InstanceIDPrefix + hex.EncodeToString(b[:]), Host: host,
		Version: version, StartedAt: now.UnixMilli(), HeartbeatAt: now.UnixMilli()}}, nil
}

// InstanceID is this engine's instance id, recorded on every kernel claim it makes.
func (e *Engine) InstanceID() string { return e.inst.row.ID }

// register records this instance in the store; Start calls it before any worker claims.
func (e *Engine) register(ctx context.Context) error {
	now := e.nowMS()
	row := e.inst.row
	row.HeartbeatAt = now
	if err := e.store.RegisterInstance(ctx, row); err != nil {
		return err
	}
	e.inst.took()
	e.log.Info("instance registered", "instance", row.ID, "host", row.Host, "version", row.Version)
	return nil
}

// heartbeat renews this instance's heartbeat every interval until ctx ends.
func (e *Engine) heartbeat(ctx context.Context) {
	defer e.wg.Done()
	tick := time.NewTicker(e.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		e.beatOnce(ctx)
	}
}

// beatOnce renews the heartbeat once.
func (e *Engine) beatOnce(ctx context.Context) {
	now := e.nowMS()
	wasDead, err := e.store.Heartbeat(ctx, e.inst.row, now)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("heartbeat", "instance", e.inst.row.ID, "error", err)
		}
		return
	}
	if wasDead {
		e.log.Warn("this instance had been declared dead: the kernel claims it held were released and its commits under them are refused; it serves again",
			"instance", e.inst.row.ID)
	}
	e.inst.took()
}

// leave marks this instance dead at a clean stop, so that the survivors release at once what its
// abandoned evaluations held, instead of after the heartbeat timeout.
func (e *Engine) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	if err := e.store.LeaveInstance(ctx, e.inst.row.ID, e.nowMS()); err != nil {
		e.log.Warn("leaving", "instance", e.inst.row.ID, "error", err)
	}
}

// leaveTimeout bounds the one write of a clean stop: a store that does not answer within it leaves
// the row to lapse by the heartbeat timeout.
const leaveTimeout = 5 * time.Second

// The reasons /readyz gives for the heartbeat (docs/operations.md#health).
const (
	// ReasonNotRegistered: the engine has not started, so no claim of this instance could name a
	// live one.
	ReasonNotRegistered = "heartbeat: not registered yet"
	// ReasonHeartbeatLapsed is followed by the renewal's age and the timeout.
	ReasonHeartbeatLapsed = "heartbeat: not current"
)

// HeartbeatLapse says why this instance's own heartbeat is not current (its last renewal the store
// took is older than the timeout, so the others may have declared it dead), or "" when it is.
func (e *Engine) HeartbeatLapse() string {
	last := e.inst.beat.Load()
	if last == nil {
		return ReasonNotRegistered
	}
	if age := time.Since(*last); age > e.cfg.HeartbeatTimeout {
		return fmt.Sprintf("%s: last renewed %s ago, past the timeout of %s", ReasonHeartbeatLapsed, age.Round(time.Millisecond), e.cfg.HeartbeatTimeout)
	}
	return ""
}

// Heartbeat is this instance's heartbeat interval and the timeout past which another instance
// declares it dead (docs/operations.md#several-instances).
func (e *Engine) Heartbeat() (interval, timeout time.Duration) {
	return e.cfg.HeartbeatInterval, e.cfg.HeartbeatTimeout
}

// takeOver declares dead the other instances whose heartbeat lapsed, and releases the kernel claims
// of dead instances by the expiry rule (docs/operations.md#several-instances). It reports how many
// rows it settled or released.
func (e *Engine) takeOver(ctx context.Context) (int, error) {
	now := e.nowMS()
	self := e.inst.row.ID
	var dead []store.Instance
	var orphans []store.OrphanedClaim
	err := e.store.Write(ctx, func(tx *store.Tx) error {
		var err error
		if dead, err = store.DeclareDead(ctx, tx, self, now-e.cfg.HeartbeatTimeout.Milliseconds(), now); err != nil {
			return err
		}
		if _, err = store.ForgetInstances(ctx, tx, now-DeadInstanceRetention.Milliseconds()); err != nil {
			return err
		}
		orphans, err = store.OrphanedClaims(ctx, tx, self, SweepBatch)
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, d := range dead {
		e.log.Warn("instance declared dead: its heartbeat lapsed; releasing its kernel claims",
			"instance", d.ID, "host", d.Host, "last_heartbeat", store.FormatMillis(d.HeartbeatAt),
			"timeout", e.cfg.HeartbeatTimeout)
	}
	released := map[string]int{}
	n := 0
	for _, o := range orphans {
		err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
			run, err := store.LockRun(ctx, tx, o.RunID)
			if err != nil {
				return err
			}
			t, err := store.LockTask(ctx, tx, o.ID)
			if err != nil {
				return err
			}
			ok, err := store.StillOrphaned(ctx, tx, o.ID, o.Generation, self)
			if err != nil || !ok {
				return err
			}
			n++
			released[o.Instance]++
			return e.expireClaim(ctx, tx, fx, run, t, now, "kernel instance "+o.Instance, true, "")
		})
		if err != nil {
			return n, err
		}
	}
	for id, rows := range released {
		e.log.Info("released the kernel claims of a dead instance by the expiry rule", "instance", id, "rows", rows)
	}
	return n, nil
}
