package memory

import (
	"context"
	"errors"

	"github.com/nexuskernel/nexus/core/refusal"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// Backing is where a workspace's memory lives for the member doors (docs/api.md#memory): kernel
// memory, or the memory plugin its override names.
type Backing struct {
	// Executor is the executor the workspace's override hands nexus.memory to; "" when the
	// workspace keeps kernel memory.
	Executor string
	// Plugin is the memory plugin that runs Executor on this server; "" when none does (an
	// executor of its own, a tool-provider plugin, or one revoked or no longer eligible).
	Plugin string
	// Provider is Plugin's store while the plugin is ready on this instance; nil otherwise.
	Provider memsdk.Provider
	// Conditional says Provider keeps document ids and honours a write's Expect: the plugin
	// reported protocol ConditionalMinor or later.
	Conditional bool
}

// ConditionalMinor is the plugin protocol minor that added document ids and conditional writes
// (docs/plugins.md#protocol-13): the member doors write through a plugin of this minor or later.
const ConditionalMinor = 3

// Backings answers a workspace's Backing. It is read at every door call, never kept, so a door
// follows the override exactly as the memory calls born at the same moment do.
type Backings interface {
	Backing(ctx context.Context, workspaceID int64) (Backing, error)
}

// backingOf answers the caller's workspace's backing; without Backings every workspace keeps
// kernel memory.
func (d *Doors) backingOf(ctx context.Context, c Caller) (Backing, error) {
	if d.backings == nil {
		return Backing{}, nil
	}
	return d.backings.Backing(ctx, c.WorkspaceID)
}

// providerOf answers the store a door read of a non-skill document goes to: nil for kernel
// memory, else the workspace's memory plugin, or the refusal saying why it cannot be read.
func (d *Doors) providerOf(ctx context.Context, c Caller) (memsdk.Provider, error) {
	b, err := d.readyBacking(ctx, c)
	return b.Provider, err
}

// readyBacking answers the caller's workspace's backing when its store can be reached now: the
// kernel's (no Provider), or a memory plugin ready on this instance; else the refusal saying why
// not (memory_provider_unreachable, memory_unavailable).
func (d *Doors) readyBacking(ctx context.Context, c Caller) (Backing, error) {
	b, err := d.backingOf(ctx, c)
	switch {
	case err != nil:
		return Backing{}, err
	case b.Executor == "":
		return Backing{}, nil
	case b.Plugin == "":
		return Backing{}, refusal.Newf(refusal.Conflict, CodeProviderUnreachable,
			"This workspace's memory is served by executor %s, which is not a memory plugin of this server; read its documents through its own tools.", b.Executor).
			With("executor_public_id", b.Executor)
	case b.Provider == nil:
		return Backing{}, unavailable(b.Plugin)
	}
	return b, nil
}

// unavailable is a provider that cannot answer now (503 memory_unavailable), the word the tools
// answer a model with for the same fact.
func unavailable(name string) error {
	return refusal.Newf(refusal.Unavailable, memsdk.CodeUnavailable,
		"The memory plugin %s cannot answer now: it is starting, restarting or failing. Try again shortly.", name).With("plugin", name)
}

// providerFailure turns a provider's failure that no door word names into the door's answer:
// the caller's own end passes; a store that failed (memory.ErrUnavailable), a plugin that died
// mid-call (plugin.ErrPluginShutdown) or any other error is 503 memory_unavailable, as the tools
// answer a model.
func providerFailure(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	r := refusal.New(refusal.Unavailable, memsdk.CodeUnavailable, "The workspace's memory store could not complete this call. Try again shortly.")
	r.Cause = err
	return r
}

// providerLookup finds the workspace's backing once, on the first read that needs it.
type providerLookup struct {
	d    *Doors
	c    Caller
	done bool
	p    memsdk.Provider
	err  error
}

func (d *Doors) lazyProvider(c Caller) *providerLookup { return &providerLookup{d: d, c: c} }

// forName answers the store a read of a document name, or of a name prefix, goes to: nil (the
// kernel store) for a name under skills/, which stays in kernel memory, else the workspace's
// provider (nil when it keeps kernel memory).
func (l *providerLookup) forName(ctx context.Context, name string) (memsdk.Provider, error) {
	if memsdk.IsReservedName(name) {
		return nil, nil
	}
	if !l.done {
		l.p, l.err = l.d.providerOf(ctx, l.c)
		l.done = true
	}
	return l.p, l.err
}

// writeTarget answers the store a write, edit or delete goes to: nil (the kernel store) for a
// skill document, which stays in kernel memory, or while the workspace keeps kernel memory;
// else the workspace's memory plugin when it keeps conditions (protocol 1.3 or later), or the
// refusal saying why it cannot be written: memory_provider_unreachable, memory_unavailable,
// memory_conditions_unsupported. A write never lands where the agents do not read.
func (d *Doors) writeTarget(ctx context.Context, c Caller, t target) (memsdk.Provider, error) {
	if t.skill {
		return nil, nil
	}
	b, err := d.readyBacking(ctx, c)
	if err != nil || b.Provider == nil {
		return nil, err
	}
	if !b.Conditional {
		return nil, refusal.Newf(refusal.Conflict, CodeConditionsUnsupported,
			"%s is in the memory plugin %s, which speaks a plugin protocol before 1.3: it cannot check expected_public_id and expected_lock_version.", t.path, b.Plugin).
			With("path", pathPath).With("plugin", b.Plugin)
	}
	return b.Provider, nil
}

// providerExpect is a door's condition in a provider's terms: the public id the door showed is
// the document's id, and the lock version its version.
func providerExpect(e *Expect) *memsdk.Expect {
	if e == nil {
		return nil
	}
	return &memsdk.Expect{Absent: e.Absent, ID: e.PublicID, Version: uint64(max(e.LockVersion, 0))}
}

// providerRefusal turns a provider's answer to a write into the door's: the stored state's
// words as for kernel memory, anything else 503 memory_unavailable.
func providerRefusal(ctx context.Context, err error, path string) error {
	for _, s := range []error{ErrStale, memsdk.ErrFull, memsdk.ErrTooLarge, memsdk.ErrEditNotFound, memsdk.ErrEditAmbiguous, memsdk.ErrNotFound} {
		if errors.Is(err, s) {
			return stateRefusal(err, path)
		}
	}
	return providerFailure(ctx, err)
}
