package memory

import (
	"context"
	"errors"
	"fmt"
	"github.com/nexuskernel/nexus/sdk/jsonwire"

	"github.com/nexuskernel/nexus/core/store"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// RunFacts are the facts of a run that its memory depends on, all frozen at acceptance.
type RunFacts struct {
	WorkspacePublicID string
	// ConversationPublicID is the run's conversation; empty for a standalone run.
	ConversationPublicID string
	// Principal is the run's memory principal (MemoryPrincipal).
	Principal Principal
}

// ConversationState is what a conversation is now, as a memory binding onto it sees it.
type ConversationState int

const (
	// ConversationGone: the conversation was deleted; its binding is dropped.
	ConversationGone ConversationState = iota
	// ConversationReadOnly: archived, or the memory principal may no longer write in it; its
	// binding is downgraded to read.
	ConversationReadOnly
	// ConversationWritable: the binding keeps its frozen access.
	ConversationWritable
)

// ConversationStates answers the live state of a conversation for a run's memory principal.
// The run engine implements it over its conversation rows, reading through q (its transaction,
// when it resolves inside one).
type ConversationStates interface {
	ConversationState(ctx context.Context, q store.Querier, conversationPublicID string, principal Principal) (ConversationState, error)
}

// Resolver turns a run's frozen memory configuration into the bindings of one call, against
// live rows (docs/agent-tools.md#memory-and-skills).
type Resolver struct {
	db            *store.Store
	conversations ConversationStates
}

// NewResolver returns a Resolver over db. conversations may be nil only where no run has a
// conversation binding (the member doors); resolving one without it is an error.
func NewResolver(db *store.Store, conversations ConversationStates) *Resolver {
	return &Resolver{db: db, conversations: conversations}
}

func (r *Resolver) querier(q store.Querier) store.Querier {
	if q == nil {
		return r.db.Reader()
	}
	return q
}

// ControllingPerson answers the public id of the person who controls p
// (docs/agent-tools.md#memory-and-skills): a person controls themself, an agent's steward controls
// it. An agent that is not stored has none, and answers "".
func (r *Resolver) ControllingPerson(ctx context.Context, q store.Querier, p Principal) (string, error) {
	switch p.Kind {
	case PrincipalUser:
		return p.PublicID, nil
	case PrincipalAgent:
		if !jsonwire.IsPublicID(p.PublicID) {
			return "", nil
		}
		id, err := store.AgentStewardPublicID(ctx, r.querier(q), p.PublicID)
		if errors.Is(err, store.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("memory: read the steward of agent %s: %w", p.PublicID, err)
		}
		return id, nil
	}
	return "", fmt.Errorf("memory: unknown principal kind %q", p.Kind)
}

// Freeze answers the configuration a run freezes at acceptance: the wave-1 defaults
// (DefaultContext) for its conversation, if any, and its memory principal. q may be nil (the
// read pool) or the accepting transaction.
func (r *Resolver) Freeze(ctx context.Context, q store.Querier, f RunFacts) (Context, error) {
	person, err := r.ControllingPerson(ctx, q, f.Principal)
	if err != nil {
		return Context{}, err
	}
	return DefaultContext(f.ConversationPublicID != "", person != ""), nil
}

// Resolve answers the bindings one memory call runs with, in the frozen order:
//
//   - conversation: the run's conversation (or the one the binding names); dropped when the
//     run has none or it was deleted, downgraded to read when it is archived or the principal
//     may no longer write in it;
//   - workspace: the run's workspace;
//   - user: the principal's controlling person, dropped when there is none.
//
// q may be nil (the read pool) or the caller's transaction. A frozen configuration that breaks
// the grammar is ErrContextInvalid: no call may run on it.
func (r *Resolver) Resolve(ctx context.Context, q store.Querier, frozen Context, f RunFacts) ([]memsdk.Scope, error) {
	if err := frozen.Validate(); err != nil {
		return nil, err
	}
	if !jsonwire.IsPublicID(f.WorkspacePublicID) {
		return nil, fmt.Errorf("memory: workspace id %q is not a canonical UUID", f.WorkspacePublicID)
	}
	out := make([]memsdk.Scope, 0, len(frozen.Bindings))
	person, personRead := "", false
	for _, b := range frozen.Bindings {
		s := memsdk.Scope{Binding: b.Name, Kind: b.Scope, Access: b.Access, WorkspaceID: f.WorkspacePublicID}
		switch b.Scope {
		case memsdk.ScopeConversation:
			id := b.ConversationPublicID
			if id == "" {
				id = f.ConversationPublicID
			}
			if id == "" {
				continue
			}
			if r.conversations == nil {
				return nil, errors.New("memory: a conversation binding needs ConversationStates")
			}
			state, err := r.conversations.ConversationState(ctx, r.querier(q), id, f.Principal)
			if err != nil {
				return nil, fmt.Errorf("memory: read conversation %s: %w", id, err)
			}
			switch state {
			case ConversationGone:
				continue
			case ConversationReadOnly:
				s.Access = memsdk.AccessRead
			}
			s.OwnerID = id
		case memsdk.ScopeWorkspace:
			s.OwnerID = f.WorkspacePublicID
		case memsdk.ScopeUser:
			if !personRead {
				p, err := r.ControllingPerson(ctx, q, f.Principal)
				if err != nil {
					return nil, err
				}
				person, personRead = p, true
			}
			if person == "" {
				continue
			}
			s.OwnerID = person
		}
		out = append(out, s)
	}
	return out, nil
}
