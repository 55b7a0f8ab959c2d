package executors

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// Addressing is the run engine's Announcements seam (docs/development.md#how-the-kernel-runs-work
// rules 1 and 3): it answers, inside the birth transaction, which Runner or tool providers
// currently announce a served name, with the profiles they announced. It reads the served-names
// table the announcement door keeps beside each announcement, so that addressing a row is one
// indexed lookup.
type Addressing struct{}

var _ runs.Announcements = Addressing{}

// RunnerTool reports whether the Runner is an active Runner of the workspace that currently
// announces name, with its display name, announced profile and timeout_ms.
func (Addressing) RunnerTool(ctx context.Context, q store.Querier, workspaceID int64, runnerPublicID, name string) (runs.Served, bool, error) {
	s, err := store.RunnerServing(ctx, q, workspaceID, runnerPublicID, name)
	if errors.Is(err, store.ErrNotFound) {
		return runs.Served{}, false, nil
	}
	if err != nil {
		return runs.Served{}, false, err
	}
	served, err := servedOf(s)
	return served, err == nil, err
}

// PoolTool lists the active tool providers of the workspace that currently announce name, in
// public id order. A Runner is never a pool member, whatever it announces.
func (Addressing) PoolTool(ctx context.Context, q store.Querier, workspaceID int64, name string) ([]runs.Served, error) {
	rows, err := store.PoolServing(ctx, q, workspaceID, name)
	if err != nil {
		return nil, err
	}
	out := make([]runs.Served, 0, len(rows))
	for i := range rows {
		s, err := servedOf(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func servedOf(s *store.Serving) (runs.Served, error) {
	p, err := announce.ParseEffectProfile([]byte(s.Profile))
	if err != nil {
		return runs.Served{}, fmt.Errorf("executors: stored profile of %s: %w", s.PublicID, err)
	}
	out := runs.Served{ExecutorPublicID: s.PublicID, DisplayName: s.DisplayName, Profile: p}
	if s.TimeoutMS != nil {
		out.TimeoutMS = *s.TimeoutMS
	}
	return out, nil
}
