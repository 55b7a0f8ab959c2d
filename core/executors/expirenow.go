package executors

import (
	"context"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/runs"
)

// ExpireClaim applies the expiry rule at once to a row the executor holds with token
// (docs/api.md#runs the early application (docs/development.md#the-plugin-host),
// docs/plugins.md#crashes): a plugin host that knows a non-replayable call it claimed was lost
// settles it uncertain before the deadline, and cause, said in the row's detail, is why. A row that
// is no longer live, or whose current claim is not token's, is left alone; the answer is then false.
func (s *Service) ExpireClaim(ctx context.Context, ex *identity.Executor, runID, key, token, cause string) (bool, error) {
	applied := false
	err := s.engine.Write(ctx, func(x *runs.Tx) error {
		applied = false
		run, t, err := lockRow(ctx, x.Tx, ex, runID, key)
		if err != nil {
			return err
		}
		if err := addressedHere(ex, t); err != nil {
			return err
		}
		if runs.Terminal(t.Status) || t.ClaimedAt == nil || !tokenIs(t, token) {
			return nil
		}
		if err := x.ExpireEarly(ctx, run, t, cause); err != nil {
			return err
		}
		applied = true
		return nil
	})
	return applied, err
}
