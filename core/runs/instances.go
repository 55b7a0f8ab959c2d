package runs

import (
	"context"
	"time"

	"github.com/nexuskernel/nexus/core/liveness"
	"github.com/nexuskernel/nexus/core/store"
)

// Instance liveness (docs/operations.md#instance-liveness-and-takeover): every engine registers
// its instance in the store at start and renews a heartbeat (core/liveness); every kernel claim,
// and every claim its plugin host makes, records the claiming instance; a survivor that finds
// another instance's heartbeat older than the timeout declares it dead and releases the claims it
// held at once, by the expiry rule, as if their deadlines had passed, except that a plugin's
// replayable call is released for the survivors' copies of the plugin to call again (ApplyExpiry).

// InstanceID is this engine's instance id, recorded on every kernel claim it makes and on every
// claim its plugin host makes (core/executors.PluginPlane).
func (e *Engine) InstanceID() string { return e.inst.ID() }

// HeartbeatLapse says why this instance's own heartbeat is not current, or "" when it is
// (liveness.Instance.Lapse).
func (e *Engine) HeartbeatLapse() string { return e.inst.Lapse() }

// Heartbeat is this instance's heartbeat interval and the timeout past which another instance
// declares it dead (docs/operations.md#several-instances).
func (e *Engine) Heartbeat() (interval, timeout time.Duration) {
	return e.cfg.HeartbeatInterval, e.cfg.HeartbeatTimeout
}

// takeOver declares dead the other instances whose heartbeat lapsed, and releases the kernel and
// plugin claims of dead instances by the expiry rule (docs/operations.md#several-instances). It reports how many
// rows it settled or released.
func (e *Engine) takeOver(ctx context.Context) (int, error) {
	now := e.nowMS()
	self := e.inst.ID()
	var dead []store.Instance
	var orphans []store.OrphanedClaim
	err := e.store.Write(ctx, func(tx *store.Tx) error {
		var err error
		if dead, err = store.DeclareDead(ctx, tx, self, now-e.cfg.HeartbeatTimeout.Milliseconds(), now); err != nil {
			return err
		}
		if _, err = store.ForgetInstances(ctx, tx, now-liveness.DeadInstanceRetention.Milliseconds()); err != nil {
			return err
		}
		orphans, err = store.OrphanedClaims(ctx, tx, self, SweepBatch)
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, d := range dead {
		e.log.Warn("instance declared dead: its heartbeat lapsed; releasing its kernel and plugin claims",
			"instance", d.ID, "host", d.Host, "last_heartbeat", store.FormatMillis(d.HeartbeatAt),
			"timeout", e.cfg.HeartbeatTimeout)
	}
	kernel, replayed, settled := map[string]int{}, map[string]int{}, map[string]int{}
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
			by := "kernel instance " + o.Instance
			executor := t.ClaimedBy.Executor()
			if executor != "" {
				by = "executor " + executor + " on instance " + o.Instance
			}
			if err := e.expireClaim(ctx, tx, fx, run, t, now, by, true, ""); err != nil {
				return err
			}
			switch {
			case executor == "":
				kernel[o.Instance]++
			case t.ClaimedAt == nil:
				replayed[o.Instance]++ // released for a survivor's copy of the plugin
			default:
				settled[o.Instance]++
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	for id, rows := range kernel {
		e.log.Info("released the kernel claims of a dead instance by the expiry rule", "instance", id, "rows", rows)
	}
	for id := range mergeKeys(replayed, settled) {
		e.log.Info("released the plugin claims of a dead instance by the expiry rule", "instance", id,
			"replayed", replayed[id], "settled", settled[id])
	}
	return n, nil
}

// mergeKeys is the set of keys of a and b.
func mergeKeys(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
