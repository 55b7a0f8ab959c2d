package conversations

import (
	"context"
	"errors"

	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// ConversationStates answers kernel memory's question about a conversation binding
// (docs/agent-tools.md#memory-and-skills) from the conversation rows this package owns: gone when
// the conversation does not exist, read-only when it is archived or the memory principal may no
// longer write in its workspace, writable otherwise.
type ConversationStates struct{}

var _ memory.ConversationStates = ConversationStates{}

// ConversationState implements memory.ConversationStates.
func (ConversationStates) ConversationState(ctx context.Context, q store.Querier, conversationPublicID string, p memory.Principal) (memory.ConversationState, error) {
	if !store.IsPublicID(conversationPublicID) {
		return memory.ConversationGone, nil
	}
	c, err := store.ConversationByPublicID(ctx, q, conversationPublicID)
	if errors.Is(err, store.ErrNotFound) {
		return memory.ConversationGone, nil
	}
	if err != nil {
		return 0, err
	}
	if c.Status == runs.ConversationArchived {
		return memory.ConversationReadOnly, nil
	}
	member, err := store.IsWorkspaceMember(ctx, q, c.WorkspaceID, p.Kind, p.PublicID)
	if err != nil {
		return 0, err
	}
	if !member {
		return memory.ConversationReadOnly, nil
	}
	return memory.ConversationWritable, nil
}
