package identity

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// Executor kinds and statuses (docs/api.md#executors).
const (
	ExecutorRunner       = store.ExecutorRunner
	ExecutorToolProvider = store.ExecutorToolProvider
	ExecutorActive       = store.ExecutorActive
	ExecutorRevoked      = store.ExecutorRevoked
)

// Presence words (docs/api.md#executors): display only, never a condition for anything.
const (
	PresenceOnline     = "online"
	PresenceOffline    = "offline"
	PresenceNotYetSeen = "not_yet_seen"
)

// PresenceOnlineWindow is how long after its last request an executor reads online
// (docs/api.md#executors, docs/api.md#limits).
const PresenceOnlineWindow = 30 * time.Second

// ExecutorView is an executor as a member reads it.
type ExecutorView struct {
	Executor
	// LastSeenAt is Unix ms of its last executor-plane request (recorded at most once per
	// PresenceWriteInterval); nil before the first.
	LastSeenAt *int64
	// Presence is online, offline or not_yet_seen.
	Presence string
	// ConnectedAt is Unix ms of the opening of its current event stream; nil when none is open.
	// A stream's holder keeps LastSeenAt fresh, so a connected_at recorded by an instance that
	// died with its streams is shown only while the executor reads online.
	ConnectedAt *int64
}

func (d *Directory) viewOf(r *store.Executor) *ExecutorView {
	v := &ExecutorView{Executor: *executorOf(r), LastSeenAt: nullMillis(r.LastSeenAt)}
	switch {
	case v.LastSeenAt == nil:
		v.Presence = PresenceNotYetSeen
	case store.Millis(d.now())-*v.LastSeenAt <= PresenceOnlineWindow.Milliseconds():
		v.Presence = PresenceOnline
	default:
		v.Presence = PresenceOffline
	}
	if v.Presence == PresenceOnline {
		v.ConnectedAt = nullMillis(r.ConnectedAt)
	}
	return v
}

// CreateExecutorRequest is POST /agent_api/v1/executors.
type CreateExecutorRequest struct {
	// Kind is runner or tool_provider.
	Kind        string
	DisplayName string
	// Workspace is the workspace's public id or handle; nil is allowed when the caller owns
	// exactly one workspace.
	Workspace *string
}

// CreatedExecutor is an executor and a token for it, shown once.
type CreatedExecutor struct {
	Executor *ExecutorView
	Token    string
}

// CreateExecutor creates an executor in a workspace the caller owns (docs/api.md#executors). The
// workspace is a body field, so a foreign or unknown one is 422 at executor.workspace_public_id (a
// body never reveals whether a foreign workspace exists), while one the caller belongs to without
// owning it is 403 not_authorized, decided before the other fields' 422s as docs/api.md#identity
// the order puts the role before the body (docs/api.md#identity).
func (d *Directory) CreateExecutor(ctx context.Context, caller *Principal, req *CreateExecutorRequest) (*CreatedExecutor, error) {
	if !caller.IsUser() {
		return nil, ErrNotUser
	}
	const wsPath = "executor.workspace_public_id"
	var ws *Workspace
	var wsErr error
	if req.Workspace != nil {
		w, err := d.visible(ctx, d.store.Reader(), caller, *req.Workspace)
		switch {
		case err == nil && w.Role != RoleOwner:
			return nil, ErrNotAuthorized
		case err == nil:
			ws = w
		default:
			if r, ok := refusal.As(err); !ok || r.Code != refusal.CodeNotFound {
				return nil, err
			}
			wsErr = invalid(wsPath, "No workspace %q among yours.", *req.Workspace)
		}
	} else {
		all, err := d.Workspaces(ctx, caller)
		if err != nil {
			return nil, err
		}
		var owned []Workspace
		for _, w := range all {
			if w.Role == RoleOwner {
				owned = append(owned, w)
			}
		}
		if len(owned) == 1 {
			ws = &owned[0]
		} else {
			wsErr = invalid(wsPath, "workspace_public_id is required unless you own exactly one workspace.")
		}
	}
	if req.Kind != ExecutorRunner && req.Kind != ExecutorToolProvider {
		return nil, invalid("executor.kind", "kind must be runner or tool_provider.")
	}
	if !ValidDisplayName(req.DisplayName) {
		return nil, invalid("executor.display_name", "display_name must be 1 to %d characters without control or bidirectional control characters.", maxDisplayNameChars)
	}
	if wsErr != nil {
		return nil, wsErr
	}
	acc := &Access{Caller: caller, Workspace: *ws}
	secret, hash := MintToken(ExecutorPlane)
	at := store.Millis(d.now())
	e := &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: ws.ID, WorkspacePublicID: ws.PublicID,
		Kind: req.Kind, DisplayName: req.DisplayName, Status: ExecutorActive, CreatedAt: at}
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		if err := d.recheck(ctx, tx, acc, NeedOwner); err != nil {
			return err
		}
		if err := store.InsertExecutor(ctx, tx, e); err != nil {
			return err
		}
		return store.InsertExecutorToken(ctx, tx, &store.ExecutorToken{PublicID: store.NewPublicID(), ExecutorID: e.ID, SecretHash: hash, CreatedAt: at})
	})
	if err != nil {
		return nil, err
	}
	return &CreatedExecutor{Executor: d.viewOf(e), Token: secret}, nil
}

// ExecutorFilter is the query of GET /agent_api/v1/executors.
type ExecutorFilter struct {
	// Kind is runner, tool_provider or "" for both.
	Kind string
	// Status is active, revoked or "" for active.
	Status string
	// Workspace narrows the listing to one of the caller's workspaces (public id or handle);
	// "" lists all of them.
	Workspace string
}

// Executors lists the executors of the caller's workspaces, by display name then public id.
// Another kind or status word is 400 parameter_invalid; a workspace filter naming a workspace
// the caller is not in is not_found.
func (d *Directory) Executors(ctx context.Context, caller *Principal, f *ExecutorFilter) ([]ExecutorView, error) {
	switch f.Kind {
	case "", ExecutorRunner, ExecutorToolProvider:
	default:
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "kind must be runner or tool_provider.").With("path", "kind")
	}
	status := f.Status
	switch status {
	case "":
		status = ExecutorActive
	case ExecutorActive, ExecutorRevoked:
	default:
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "status must be active or revoked.").With("path", "status")
	}
	var ids []int64
	if f.Workspace != "" {
		w, err := d.visible(ctx, d.store.Reader(), caller, f.Workspace)
		if err != nil {
			return nil, err
		}
		ids = []int64{w.ID}
	} else {
		all, err := d.Workspaces(ctx, caller)
		if err != nil {
			return nil, err
		}
		for _, w := range all {
			ids = append(ids, w.ID)
		}
	}
	rows, err := store.ExecutorsOfWorkspaces(ctx, d.store.Reader(), ids, store.ExecutorFilter{Kind: f.Kind, Status: status})
	if err != nil {
		return nil, err
	}
	out := make([]ExecutorView, 0, len(rows))
	for i := range rows {
		out = append(out, *d.viewOf(&rows[i]))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DisplayName != out[j].DisplayName {
			return out[i].DisplayName < out[j].DisplayName
		}
		return out[i].PublicID < out[j].PublicID
	})
	return out, nil
}

// Executor reads one executor of the caller's workspaces; any other id is not_found.
func (d *Directory) Executor(ctx context.Context, caller *Principal, publicID string) (*ExecutorView, error) {
	e, _, err := d.executorFor(ctx, d.store.Reader(), caller, publicID)
	if err != nil {
		return nil, err
	}
	return d.viewOf(e), nil
}

// executorFor finds an executor the caller may see and the caller's role in its workspace.
func (d *Directory) executorFor(ctx context.Context, q store.Querier, caller *Principal, publicID string) (*store.Executor, string, error) {
	id, ok := canonicalID(publicID)
	if !ok {
		return nil, "", errNoExecutor(publicID)
	}
	e, err := store.ExecutorByPublicID(ctx, q, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", errNoExecutor(publicID)
	}
	if err != nil {
		return nil, "", err
	}
	role, err := roleIn(ctx, q, caller, e.WorkspaceID)
	if err != nil {
		return nil, "", err
	}
	if role == "" {
		return nil, "", errNoExecutor(publicID)
	}
	return e, role, nil
}

// ownedExecutor runs the owner checks of the executor routes inside tx: visibility (404), kind
// (403 not_user), role (403 not_authorized); it locks the executor's row.
func (d *Directory) ownedExecutor(ctx context.Context, tx *store.Tx, caller *Principal, publicID string) (*store.Executor, error) {
	e, role, err := d.executorFor(ctx, tx, caller, publicID)
	if err != nil {
		return nil, err
	}
	if err := checkNeed(caller, role, NeedOwner); err != nil {
		return nil, err
	}
	if err := store.LockExecutor(ctx, tx, e.ID); err != nil {
		return nil, err
	}
	// Re-read under the lock: a concurrent revocation may have committed meanwhile.
	return store.ExecutorByPublicID(ctx, tx, e.PublicID)
}

// RotateExecutorToken mints a new token for an executor and revokes its old ones; public id,
// announcement and work are kept. A revoked executor gets no token: 409 executor_revoked.
func (d *Directory) RotateExecutorToken(ctx context.Context, caller *Principal, publicID string) (*CreatedExecutor, error) {
	secret, hash := MintToken(ExecutorPlane)
	at := store.Millis(d.now())
	var e *store.Executor
	var invs []invalidation
	defer func() { d.auth.forget(invs...) }()
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		var err error
		if e, err = d.ownedExecutor(ctx, tx, caller, publicID); err != nil {
			return err
		}
		if e.Status != ExecutorActive {
			return refusal.Newf(refusal.Conflict, CodeExecutorRevoked, "Executor %s is revoked; revocation is final.", e.PublicID)
		}
		if err := store.RevokeExecutorTokens(ctx, tx, e.ID, at); err != nil {
			return err
		}
		if err := store.InsertExecutorToken(ctx, tx, &store.ExecutorToken{PublicID: store.NewPublicID(), ExecutorID: e.ID, SecretHash: hash, CreatedAt: at}); err != nil {
			return err
		}
		invs = append(invs, invalidation{kind: invalidateExecutor, id: e.ID})
		return d.auth.announce(ctx, tx, invs...)
	})
	if err != nil {
		return nil, err
	}
	return &CreatedExecutor{Executor: d.viewOf(e), Token: secret}, nil
}

// RevokeExecutor revokes an executor: its status becomes revoked and its tokens stop working
// before this returns (here and, through NOTIFY, on every instance); the RevocationEffects, when
// set, settle its work in the same transaction and close its streams after. Revoking a revoked
// executor changes nothing and answers it as it is.
func (d *Directory) RevokeExecutor(ctx context.Context, caller *Principal, publicID string) (*ExecutorView, error) {
	now := d.now()
	at := store.Millis(now)
	var e *store.Executor
	var revoked bool
	var invs []invalidation
	defer func() { d.auth.forget(invs...) }()
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		var err error
		if e, err = d.ownedExecutor(ctx, tx, caller, publicID); err != nil {
			return err
		}
		if e.Status != ExecutorActive {
			return nil
		}
		if _, err := store.RevokeExecutor(ctx, tx, e.ID, at); err != nil {
			return err
		}
		if err := store.RevokeExecutorTokens(ctx, tx, e.ID, at); err != nil {
			return err
		}
		if d.revoked != nil {
			if err := d.revoked.SettleRevoked(ctx, tx, e.ID, now); err != nil {
				return err
			}
		}
		invs = append(invs, invalidation{kind: invalidateExecutor, id: e.ID})
		if err := d.auth.announce(ctx, tx, invs...); err != nil {
			return err
		}
		if e, err = store.ExecutorByPublicID(ctx, tx, e.PublicID); err != nil {
			return err
		}
		revoked = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if revoked && d.revoked != nil {
		d.revoked.Revoked(e.ID)
	}
	return d.viewOf(e), nil
}
