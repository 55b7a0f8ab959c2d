package liveness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/store"
)

// The heartbeat's bounds (docs/operations.md#instance-liveness-and-takeover).
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
	// leaveTimeout bounds the one write of a clean stop: a store that does not answer within it
	// leaves the row to lapse by the heartbeat timeout.
	leaveTimeout = 5 * time.Second
)

// InstanceIDPrefix starts every instance id.
const InstanceIDPrefix = "inst_"

// The reasons /readyz gives for the heartbeat (docs/operations.md#health).
const (
	// ReasonNotRegistered: the instance has not registered, so no claim of it could name a live
	// one.
	ReasonNotRegistered = "heartbeat: not registered yet"
	// ReasonHeartbeatLapsed is followed by the renewal's age and the timeout.
	ReasonHeartbeatLapsed = "heartbeat: not current"
)

// Instance is this process's registration and heartbeat state.
type Instance struct {
	row      store.Instance
	store    *store.Store
	log      hclog.Logger
	now      func() time.Time
	interval time.Duration
	timeout  time.Duration
	// beat is when the store last took a heartbeat, read on this process's own monotonic clock
	// (not now, which a test may move): nil before the first.
	beat atomic.Pointer[time.Time]
}

// New mints this process's instance, not yet registered: its id, host name and version, started
// at now(), whose heartbeat renews every interval and lapses past timeout. now is the clock the
// rows record (the engine's).
func New(st *store.Store, log hclog.Logger, version string, now func() time.Time, interval, timeout time.Duration) (*Instance, error) {
	var b [instanceIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("liveness: instance id: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	if version == "" {
		version = "dev"
	}
	at := now().UnixMilli()
	return &Instance{row: store.Instance{ID: InstanceIDPrefix + hex.EncodeToString(b[:]), Host: host, Version: version,
		StartedAt: at, HeartbeatAt: at}, store: st, log: log, now: now, interval: interval, timeout: timeout}, nil
}

// ID is the instance id, recorded on every claim the instance makes.
func (in *Instance) ID() string { return in.row.ID }

// took records a heartbeat the store took just now.
func (in *Instance) took() {
	now := time.Now()
	in.beat.Store(&now)
}

// Register records the instance in the store, live; its claims may name it from then on.
func (in *Instance) Register(ctx context.Context) error {
	row := in.row
	row.HeartbeatAt = in.now().UnixMilli()
	if err := in.store.RegisterInstance(ctx, row); err != nil {
		return err
	}
	in.took()
	in.log.Info("instance registered", "instance", row.ID, "host", row.Host, "version", row.Version)
	return nil
}

// Run renews the heartbeat every interval until ctx ends.
func (in *Instance) Run(ctx context.Context) {
	tick := time.NewTicker(in.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		in.Beat(ctx)
	}
}

// Beat renews the heartbeat once, and says in the log when the others had declared the instance
// dead meanwhile.
func (in *Instance) Beat(ctx context.Context) {
	wasDead, err := in.store.Heartbeat(ctx, in.row, in.now().UnixMilli())
	if err != nil {
		if ctx.Err() == nil {
			in.log.Error("heartbeat", "instance", in.row.ID, "error", err)
		}
		return
	}
	if wasDead {
		in.log.Warn("this instance had been declared dead: the kernel and plugin claims it held were released and its commits under them are refused; it serves again",
			"instance", in.row.ID)
	}
	in.took()
}

// Leave marks the instance dead at a clean stop, so that the survivors release at once what it
// held, instead of after the heartbeat timeout.
func (in *Instance) Leave() {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	if err := in.store.LeaveInstance(ctx, in.row.ID, in.now().UnixMilli()); err != nil {
		in.log.Warn("leaving", "instance", in.row.ID, "error", err)
	}
}

// Lapse says why the instance's own heartbeat is not current (its last renewal the store took is
// older than the timeout, so the others may have declared it dead), or "" when it is.
func (in *Instance) Lapse() string {
	last := in.beat.Load()
	if last == nil {
		return ReasonNotRegistered
	}
	if age := time.Since(*last); age > in.timeout {
		return fmt.Sprintf("%s: last renewed %s ago, past the timeout of %s", ReasonHeartbeatLapsed, age.Round(time.Millisecond), in.timeout)
	}
	return ""
}
