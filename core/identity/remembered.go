package identity

import (
	"context"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/internal/memo"
)

// maxRememberedAccess bounds the directory's memory of workspace reads: an entry is about two
// hundred bytes, and a server sees far fewer (caller, workspace) pairs than this between two
// membership changes; a full memory is emptied rather than tracked for recency, since refilling
// costs one read per pair.
const maxRememberedAccess = 4096

// RememberedAccess is Access for a write that confirms the caller's standing in its own
// transaction (Access.Confirm): on PostgreSQL it answers from what the directory last read for
// the caller and ref when that reading satisfies need, and reads (and remembers) otherwise. A
// remembered answer saves the request its workspace read; what it costs is that a caller who
// lost standing since is refused by the write rather than before it, so a route that refuses
// anything after a remembered answer first asks Access afresh (Access.Remembered). On SQLite,
// which never plans a write, it is Access.
func (d *Directory) RememberedAccess(ctx context.Context, caller *Principal, ref string, need Need) (*Access, error) {
	if d.store.Dialect() != store.Postgres {
		return d.Access(ctx, caller, ref, need)
	}
	key := rememberKey{caller.Kind, caller.ID, ref}
	if w, ok := d.remembered.Get(key); ok && checkNeed(caller, w.Role, need) == nil {
		return &Access{Caller: caller, Workspace: w, confirm: &confirmation{d: d, ref: ref, need: need}}, nil
	}
	acc, err := d.Access(ctx, caller, ref, need)
	if err != nil {
		d.remembered.Delete(key)
		return nil, err
	}
	d.remembered.Put(key, acc.Workspace)
	return acc, nil
}

// Remembered reports whether acc was answered from memory rather than read.
func (acc *Access) Remembered() bool { return acc.confirm != nil }

// Confirm makes a write stand on acc: an Access that was read needs nothing more; a remembered
// one adds to a planned write the guard that its reading still holds (the statement writes
// nothing otherwise, and the caller falls back to a transaction), and in a transaction reads the
// standing afresh, refusing as Access does and answering the Access read.
func (acc *Access) Confirm(ctx context.Context, tx *store.Tx) (*Access, error) {
	c := acc.confirm
	if c == nil {
		return acc, nil
	}
	id, byID := workspaceRef(c.ref)
	if tx.Planning() {
		var userID int64
		if acc.Caller.IsUser() {
			userID = acc.Caller.ID
		}
		store.RequireWorkspace(tx, acc.Workspace.ID, id, byID, userID, acc.Workspace.Role)
		return acc, nil
	}
	key := rememberKey{acc.Caller.Kind, acc.Caller.ID, c.ref}
	w, err := c.d.visible(ctx, tx, acc.Caller, c.ref)
	if err == nil {
		err = checkNeed(acc.Caller, w.Role, c.need)
	}
	if err != nil {
		c.d.remembered.Delete(key)
		return nil, err
	}
	c.d.remembered.Put(key, *w)
	return &Access{Caller: acc.Caller, Workspace: *w}, nil
}

// confirmation is what Confirm needs of a remembered Access.
type confirmation struct {
	d    *Directory
	ref  string
	need Need
}

// workspaceRef is the column value a reference names a workspace by: its canonical public id
// (byID) or its handle.
func workspaceRef(ref string) (string, bool) {
	if id, byID := canonicalID(ref); byID {
		return id, true
	}
	return ref, false
}

type rememberKey struct {
	kind string
	id   int64
	ref  string
}

// rememberedAccess is the directory's memory of workspace reads, for RememberedAccess. It needs
// no invalidation: every write that stands on an entry checks it.
type rememberedAccess = memo.Map[rememberKey, Workspace]
