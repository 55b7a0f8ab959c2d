package conversations

import (
	"context"
	"errors"
	"strings"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// The history reads' refusals (docs/agent-tools.md#delegation-and-conversations): the kernel turns
// them into its error results unknown_conversation and turn_not_found.
var (
	// ErrConversationUnreadable: the conversation does not exist, is of another workspace, or
	// the run's principal may not read it now.
	ErrConversationUnreadable = errors.New("conversations: no such conversation the principal can read")
	// ErrTurnNotVisible: the turn is not in the conversation's visible history.
	ErrTurnNotVisible = errors.New("conversations: the turn is not in the visible history")
)

// The turn model's kind and the roles a turn takes
// (docs/agent-tools.md#delegation-and-conversations). Wave 1 has one kind of turn, a message; its
// role is who authored it: a user, an agent, or the kernel (a delivery the kernel posted,
// docs/agent-tools.md#delegation-and-conversations).
const (
	TurnKindMessage = "message"
)

// HistoryTurn is one visible turn as the history tools show it: its facts and its three text
// fields, each nil when absent.
type HistoryTurn struct {
	PublicID   string
	Position   int64
	Kind       string
	Role       string
	CreatedAt  int64 // Unix milliseconds
	InProgress bool
	// Prompt is the text that opened the turn, Steers the steering texts that landed into it
	// joined by a blank line, Content the reply text (for an unfinished turn, what the reply
	// committed so far).
	Prompt, Steers, Content *string
	// Execution is the run's persisted progress, when asked for.
	Execution *TurnExecution
}

// TurnExecution is the persisted progress of a turn's run
// (docs/agent-tools.md#delegation-and-conversations).
type TurnExecution struct {
	RunPublicID  string
	Status       string
	Tasks        []store.TaskOutline
	TasksOmitted int64
}

// MaxExecutionTasks bounds the tasks one turn's execution block lists: the block is a progress
// outline for a model to orient by, not a trace; the task read serves the rest.
const MaxExecutionTasks = 32

// historyPrincipalReads reports whether the run's principal may read the conversations of the run's
// workspace now. Read standing on a conversation is membership of its workspace
// (docs/api.md#conventions), checked under current access, never a snapshot taken when the run
// began: a principal removed from the workspace since reads nothing.
func historyPrincipalReads(ctx context.Context, call *runs.KernelCall) (bool, error) {
	p := call.MemoryPrincipal
	return store.IsWorkspaceMember(ctx, call.Tx, call.WorkspaceID, p.Kind, p.PublicID)
}

// readableConversation finds a conversation of the run's workspace the principal may read.
func readableConversation(ctx context.Context, call *runs.KernelCall, publicID string) (*store.Conversation, error) {
	id := strings.ToLower(publicID)
	if !store.IsPublicID(id) {
		return nil, ErrConversationUnreadable
	}
	ok, err := historyPrincipalReads(ctx, call)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrConversationUnreadable
	}
	c, err := store.ConversationByPublicID(ctx, call.Tx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && c.WorkspaceID != call.WorkspaceID) {
		return nil, ErrConversationUnreadable
	}
	return c, err
}

// turnSteers answers the steering texts that landed into each of a set of turns (send with
// steer: true, carried by a seal of the turn's reply), in arrival order, keyed by turn id; both
// session_read's steers field and session_search read them through this one function.
func turnSteers(ctx context.Context, q store.Querier, turnIDs []int64) (map[int64][]string, error) {
	rows, err := store.SteersOfTurns(ctx, q, turnIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[int64][]string, len(rows))
	for _, r := range rows {
		out[r.TurnID] = append(out[r.TurnID], r.Text)
	}
	return out, nil
}

// steersText joins a turn's steering texts by a blank line; nil when there are none.
func steersText(texts []string) *string {
	if len(texts) == 0 {
		return nil
	}
	s := strings.Join(texts, "\n\n")
	return &s
}

// turnInProgress reports whether a turn is unfinished: its run has not reached a terminal
// status, which the turn's own status follows (docs/api.md#conversations).
func turnInProgress(t *store.HistoryTurn) bool {
	return t.Status == runs.TurnQueued || t.Status == runs.TurnRunning
}

// historyTurns turns rows into the history tools' turns: facts, prompt, steers and content.
// An empty text is an absent field.
func historyTurns(ctx context.Context, q store.Querier, rows []store.HistoryTurn) ([]HistoryTurn, error) {
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	steers, err := turnSteers(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	out := make([]HistoryTurn, len(rows))
	for i := range rows {
		r := &rows[i]
		h := HistoryTurn{PublicID: r.PublicID, Position: r.Position, Kind: TurnKindMessage, Role: r.AuthorKind,
			CreatedAt: r.CreatedAt, InProgress: turnInProgress(r), Steers: steersText(steers[r.ID])}
		if r.InputText != "" {
			h.Prompt = ptr(r.InputText)
		}
		switch {
		case h.InProgress:
			// Only a running turn has committed anything; a queued one has not started.
			if r.Status == runs.TurnRunning {
				if h.Content, err = store.CommittedResponse(ctx, q, r.RunID); err != nil {
					return nil, err
				}
			}
		case r.AnswerText != nil && *r.AnswerText != "":
			h.Content = ptr(*r.AnswerText)
		}
		out[i] = h
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
