package uploads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// Kinds of rows that bind uploads (docs/api.md#uploads).
const (
	// TargetTaskResult: a tool row's settled result links the upload (a commit's resource_link).
	TargetTaskResult = store.BindingTaskResult
	// TargetTaskInput: a model step's input attachments.
	TargetTaskInput = store.BindingTaskInput
	// TargetTurnInput: a conversation message's input attachments.
	TargetTurnInput = store.BindingTurnInput
)

// Target is a row that keeps uploads alive.
type Target struct {
	// Kind is TargetTaskResult, TargetTaskInput or TargetTurnInput.
	Kind string
	// ID is the internal id of the task or turn.
	ID int64
	// WorkspaceID is the workspace of its run or conversation: its members may read what it
	// binds.
	WorkspaceID int64
}

// ErrUnbindable means Bind was asked to bind an upload that is not there to bind (unknown,
// incomplete or reclaimed). A caller that checked ownership in the same transaction (the
// functions below lock what they answer) never sees it.
var ErrUnbindable = errors.New("uploads: no such complete upload to bind")

// Bind binds the uploads ids name to t inside the caller's transaction, in which the row t
// names is being settled or created: the uploads then live as long as that row. Each upload row
// is locked FOR SHARE on PostgreSQL, so the sweeper, which deletes only rows it locked FOR
// UPDATE SKIP LOCKED and found unbound, never reclaims one under this transaction. Binding the
// same upload to the same row again changes nothing. Every id must name a complete upload;
// otherwise nothing is bound and the error wraps ErrUnbindable.
func Bind(ctx context.Context, tx *store.Tx, t Target, ids []string, at time.Time) error {
	switch t.Kind {
	case TargetTaskResult, TargetTaskInput, TargetTurnInput:
	default:
		return fmt.Errorf("uploads: unknown binding kind %q", t.Kind)
	}
	for _, s := range ids {
		if _, ok := canonicalID(s); !ok {
			return fmt.Errorf("%w: %q", ErrUnbindable, s)
		}
	}
	want := canonicalIDs(ids)
	rows, err := store.LockCompleteUploads(ctx, tx, want)
	if err != nil {
		return err
	}
	found := make(map[string]int64, len(rows))
	for _, r := range rows {
		found[r.PublicID] = r.ID
	}
	for _, id := range want {
		if _, ok := found[id]; !ok {
			return fmt.Errorf("%w: %s", ErrUnbindable, id)
		}
	}
	for _, r := range rows {
		if err := store.InsertUploadBinding(ctx, tx, &store.UploadBinding{
			UploadID: r.ID, TargetKind: t.Kind, TargetID: t.ID, WorkspaceID: t.WorkspaceID, BoundAt: store.Millis(at),
		}); err != nil {
			return err
		}
	}
	return nil
}

// OwnedCaptures answers which of ids are the executor's own complete captures, locking them
// FOR SHARE on PostgreSQL until tx ends: the commit door's envelope.UploadOwnership, called
// inside the settling transaction so that what it answers is still there when Bind binds it.
// Malformed, unknown, incomplete and reclaimed ids, member uploads and other executors'
// captures are left out (unknown_result_upload for the caller).
func OwnedCaptures(ctx context.Context, tx *store.Tx, executorID int64, ids []string) ([]string, error) {
	rows, err := store.LockCompleteUploads(ctx, tx, canonicalIDs(ids))
	if err != nil {
		return nil, err
	}
	var own []string
	for _, r := range rows {
		if r.CreatorExecutorID.Valid && r.CreatorExecutorID.Int64 == executorID {
			own = append(own, r.PublicID)
		}
	}
	return own, nil
}

// BoundToResults answers which of ids are already bound to the settled results of the tasks
// taskIDs, locking them FOR SHARE on PostgreSQL: the one exception to OwnedCaptures, for the
// final commit of a tool row that owns child operations (docs/api.md#the-result-envelope), whose
// caller passes the children's ids.
func BoundToResults(ctx context.Context, tx *store.Tx, taskIDs []int64, ids []string) ([]string, error) {
	rows, err := store.UploadsBoundTo(ctx, tx, TargetTaskResult, taskIDs, canonicalIDs(ids))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.PublicID
	}
	return out, nil
}

// OwnedInputs answers which of ids are the member's own complete uploads (never an executor's
// capture), locking them FOR SHARE on PostgreSQL until tx ends, like OwnedCaptures.
func OwnedInputs(ctx context.Context, tx *store.Tx, p *identity.Principal, ids []string) ([]string, error) {
	rows, err := store.LockCompleteUploads(ctx, tx, canonicalIDs(ids))
	if err != nil {
		return nil, err
	}
	var own []string
	for _, r := range rows {
		mine := (p.Kind == CreatorUser && r.CreatorUserID.Valid && r.CreatorUserID.Int64 == p.ID) ||
			(p.Kind == CreatorAgent && r.CreatorAgentID.Valid && r.CreatorAgentID.Int64 == p.ID)
		if mine {
			own = append(own, r.PublicID)
		}
	}
	return own, nil
}

// CheckInputs refuses input attachments that are not the member's own uploads: 422
// unknown_input_upload at path[i] for the first such id (docs/api.md#conversations), nothing
// otherwise. The ids it admits are locked as OwnedInputs locks them, so the caller binds them with
// Bind in the same transaction. Telling a malformed id apart (400 parameter_invalid on the message
// door, invalid_attachments on a model step) is the caller's, before this.
func CheckInputs(ctx context.Context, tx *store.Tx, p *identity.Principal, ids []string, path string) error {
	own, err := OwnedInputs(ctx, tx, p, ids)
	if err != nil {
		return err
	}
	mine := make(map[string]bool, len(own))
	for _, id := range own {
		mine[id] = true
	}
	for i, raw := range ids {
		if id, ok := canonicalID(raw); !ok || !mine[id] {
			at := fmt.Sprintf("%s[%d]", path, i)
			return refusal.Newf(refusal.Unprocessable, CodeUnknownInputUpload, "%s: no upload %s of yours exists.", at, raw).With("path", at)
		}
	}
	return nil
}
