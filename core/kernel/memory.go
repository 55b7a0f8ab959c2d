package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/memory"
)

// MemoryCanonicals are the six memory tools.
var MemoryCanonicals = []string{"nexus.memory.ls", "nexus.memory.read", "nexus.memory.grep",
	"nexus.memory.write", "nexus.memory.edit", "nexus.memory.delete"}

// ScopeResolver resolves a run's frozen memory configuration into live bindings
// (memory.md §2.2). Kernel memory provides the authoritative resolver; DefaultScopes serves
// wave 1's default roots.
type ScopeResolver interface {
	Scopes(ctx context.Context, call *runs.KernelCall) ([]memory.Scope, error)
}

// Memory runs the six memory tools in-process: sdk/memory's Engine over the kernel's store,
// with the call's resolved bindings (kernel-tools.md §4.7). The texts, titles and refusal words
// are the Engine's, so they cannot drift from a plugin's.
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
	eng := &memory.Engine{Provider: m.Provider, Now: m.Now}
	// A row claimed before (attempt 2+) is a replay: a delete that finds its document gone
	// answers as if it had deleted it (memory.md §5.6).
	res, err := eng.Run(ctx, call.ToolName, call.Input, scopes, memory.RunOptions{Replay: call.Attempt > 1})
	if err != nil {
		return nil, err
	}
	return &runs.KernelOutcome{Result: &runs.KernelResult{Content: res.Text, StructuredContent: res.StructuredContent,
		IsError: res.IsError, Title: res.Title}}, nil
}

// DefaultScopes resolves wave 1's frozen bindings against live rows: conversation → the run's
// conversation, workspace → the run's workspace, user → the memory principal's controlling
// person (an agent's steward, or the user itself); a binding whose anchor does not exist is
// dropped.
type DefaultScopes struct {
	Store *store.Store
}

type frozenBindings struct {
	Bindings []struct {
		Name   string `json:"name"`
		Scope  string `json:"scope"`
		Access string `json:"access"`
	} `json:"bindings"`
}

// Scopes implements ScopeResolver.
func (d DefaultScopes) Scopes(ctx context.Context, call *runs.KernelCall) ([]memory.Scope, error) {
	var fb frozenBindings
	if err := json.Unmarshal(call.MemoryContext, &fb); err != nil {
		return nil, fmt.Errorf("kernel: frozen memory context: %w", err)
	}
	var out []memory.Scope
	for _, b := range fb.Bindings {
		s := memory.Scope{Binding: b.Name, Kind: memory.ScopeKind(b.Scope), Access: memory.Access(b.Access), WorkspaceID: call.WorkspacePublicID}
		switch s.Kind {
		case memory.ScopeConversation:
			if call.ConversationPublicID == "" {
				continue
			}
			s.OwnerID = call.ConversationPublicID
		case memory.ScopeWorkspace:
			s.OwnerID = call.WorkspacePublicID
		case memory.ScopeUser:
			id, err := d.controllingUser(ctx, call.MemoryPrincipal)
			if err != nil {
				return nil, err
			}
			if id == "" {
				continue
			}
			s.OwnerID = id
		default:
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

func (d DefaultScopes) controllingUser(ctx context.Context, p runs.Member) (string, error) {
	switch p.Kind {
	case store.KindUser:
		return p.PublicID, nil
	case store.KindAgent:
		var id string
		err := d.Store.Reader().Get(ctx, &id, `SELECT u.public_id FROM agents a JOIN users u ON u.id = a.steward_user_id WHERE a.public_id = ?`, p.PublicID)
		if err != nil {
			return "", nil
		}
		return id, nil
	}
	return "", nil
}
