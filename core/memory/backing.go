package memory

import (
	"context"

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
}

// Backings answers a workspace's Backing. It is read at every door call, never kept, so a door
// follows the override exactly as the memory calls born at the same moment do.
type Backings interface {
	Backing(ctx context.Context, workspaceID int64) (Backing, error)
}

// The words of a door that reaches a workspace's memory provider (docs/api.md#memory).
const (
	// CodeProviderUnreachable: the workspace hands its memory to an executor whose documents
	// this server cannot read for a person (409): one that is not a memory plugin of this
	// server's catalog, or one revoked or no longer serving the workspace.
	CodeProviderUnreachable = "memory_provider_unreachable"
	// CodeConditionsUnsupported: a member write, edit or delete of a document the workspace's
	// memory provider holds (409): the plugin protocol carries no expected version, so the
	// door's condition could not be kept.
	CodeConditionsUnsupported = "memory_conditions_unsupported"
)

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
	b, err := d.backingOf(ctx, c)
	switch {
	case err != nil:
		return nil, err
	case b.Executor == "":
		return nil, nil
	case b.Plugin == "":
		return nil, refusal.Newf(refusal.Conflict, CodeProviderUnreachable,
			"This workspace's memory is served by executor %s, which is not a memory plugin of this server; read its documents through its own tools.", b.Executor).
			With("executor_public_id", b.Executor)
	case b.Provider == nil:
		return nil, unavailable(b.Plugin)
	}
	return b.Provider, nil
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

// kernelWrite admits a write, edit or delete to the kernel store: always for a skill document,
// else only while the workspace keeps kernel memory. A workspace that hands its memory to a
// provider refuses it 409 memory_conditions_unsupported rather than write where no agent reads.
func (d *Doors) kernelWrite(ctx context.Context, c Caller, t target) error {
	if t.skill {
		return nil
	}
	b, err := d.backingOf(ctx, c)
	if err != nil || b.Executor == "" {
		return err
	}
	return refusal.Newf(refusal.Conflict, CodeConditionsUnsupported,
		"%s is in the memory of executor %s, this workspace's memory provider, whose protocol cannot check expected_public_id and expected_lock_version.", t.path, b.Executor).
		With("path", pathPath).With("executor_public_id", b.Executor)
}
