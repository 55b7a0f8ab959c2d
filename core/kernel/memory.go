package kernel

import (
	"context"
	"fmt"
	"time"

	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/memory"
)

// MemoryCanonicals are the six memory tools.
var MemoryCanonicals = []string{"nexus.memory.ls", "nexus.memory.read", "nexus.memory.grep",
	"nexus.memory.write", "nexus.memory.edit", "nexus.memory.delete"}

// ScopeResolver resolves a run's frozen memory configuration into live bindings
// (docs/agent-tools.md#memory-and-skills); MemoryScopes is the one the server wires.
type ScopeResolver interface {
	Scopes(ctx context.Context, call *runs.KernelCall) ([]memory.Scope, error)
}

// Memory runs the six memory tools in-process: sdk/memory's Engine over the kernel's store, with
// the call's resolved bindings (docs/agent-tools.md#memory-and-skills). The texts, titles and
// refusal words are the Engine's, so they cannot drift from a plugin's.
type Memory struct {
	Provider memory.Provider
	Scopes   ScopeResolver
	Now      func() time.Time
}

// Run executes one memory call. A call whose context ended (claim expired, run stopped)
// returns the error and settles nothing: the expiry rule settles the row.
func (m *Memory) Run(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	scopes, err := m.Scopes.Scopes(ctx, call)
	if err != nil {
		return nil, fmt.Errorf("kernel: memory scopes: %w", err)
	}
	if call.Tx != nil {
		// The mutation commits with the row's result, under the run's lock
		// (docs/agent-tools.md#memory-and-skills).
		ctx = kmemory.WithTx(ctx, call.Tx)
	}
	eng := &memory.Engine{Provider: m.Provider, Now: m.Now}
	// A row claimed before (attempt 2+) is a replay: a delete that finds its document gone
	// answers as if it had deleted it (docs/agent-tools.md#memory-and-skills).
	res, err := eng.Run(ctx, call.ToolName, call.Input, scopes, memory.RunOptions{Replay: call.Attempt > 1})
	if err != nil {
		return nil, err
	}
	return &runs.KernelOutcome{Result: &runs.KernelResult{Content: res.Text, StructuredContent: res.StructuredContent,
		IsError: res.IsError, Title: res.Title}}, nil
}

// MemoryScopes resolves a call's frozen memory configuration through kernel memory's resolver,
// inside the settling transaction when there is one.
type MemoryScopes struct {
	Resolver *kmemory.Resolver
}

// Scopes implements ScopeResolver.
func (m MemoryScopes) Scopes(ctx context.Context, call *runs.KernelCall) ([]memory.Scope, error) {
	frozen, err := kmemory.ParseContext(call.MemoryContext)
	if err != nil {
		return nil, err
	}
	var q store.Querier
	if call.Tx != nil {
		q = call.Tx
	}
	return m.Resolver.Resolve(ctx, q, frozen, kmemory.RunFacts{
		WorkspacePublicID:    call.WorkspacePublicID,
		ConversationPublicID: call.ConversationPublicID,
		Principal:            kmemory.Principal{Kind: call.MemoryPrincipal.Kind, PublicID: call.MemoryPrincipal.PublicID},
	})
}
