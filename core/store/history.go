package store

import (
	"context"
	"strings"
)

// HistoryTurn is a turn as the history tools read it
// (docs/agent-tools.md#delegation-and-conversations): the turn row with its run's status and its
// conversation's public id and title.
type HistoryTurn struct {
	Turn
	RunStatus            string  `db:"run_status"`
	ConversationPublicID string  `db:"conversation_public_id"`
	ConversationTitle    *string `db:"conversation_title"`
}

const selectHistoryTurnSQL = `SELECT t.id, t.public_id, t.conversation_id, t.position, t.author_kind, t.author_public_id,
  t.sender_conversation_public_id, t.input_text, t.input_attachments, t.tool_names, t.model, t.status, t.run_id,
  r.public_id AS run_public_id, t.answer_task_key, t.answer_text, t.failure_key, t.failure_detail, t.created_at, t.started_at,
  t.completed_at, r.status AS run_status, c.public_id AS conversation_public_id, c.title AS conversation_title
FROM turns t JOIN runs r ON r.id = t.run_id JOIN conversations c ON c.id = t.conversation_id`

// HistoryTurnByPublicID reads one turn of a conversation by its public id.
func HistoryTurnByPublicID(ctx context.Context, q Querier, conversationID int64, publicID string) (*HistoryTurn, error) {
	var t HistoryTurn
	if err := q.Get(ctx, &t, selectHistoryTurnSQL+` WHERE t.conversation_id = ? AND t.public_id = ?`, conversationID, ID(publicID)); err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// HistoryTurnsBefore lists up to limit turns of a conversation with a position below before
// (nil: no bound), newest first.
func HistoryTurnsBefore(ctx context.Context, q Querier, conversationID int64, before *int64, limit int) ([]HistoryTurn, error) {
	where, args := `t.conversation_id = ?`, []any{conversationID}
	if before != nil {
		where += ` AND t.position < ?`
		args = append(args, *before)
	}
	args = append(args, limit)
	var ts []HistoryTurn
	err := q.Select(ctx, &ts, selectHistoryTurnSQL+` WHERE `+where+` ORDER BY t.position DESC LIMIT ?`, args...)
	return ts, err
}

// HistoryTurnsAfter lists up to limit turns of a conversation with a position above after,
// oldest first.
func HistoryTurnsAfter(ctx context.Context, q Querier, conversationID, after int64, limit int) ([]HistoryTurn, error) {
	var ts []HistoryTurn
	err := q.Select(ctx, &ts, selectHistoryTurnSQL+` WHERE t.conversation_id = ? AND t.position > ? ORDER BY t.position LIMIT ?`,
		conversationID, after, limit)
	return ts, err
}

// TurnPositionBounds answers the lowest and highest turn positions of a conversation, and
// whether it has any turn.
func TurnPositionBounds(ctx context.Context, q Querier, conversationID int64) (lowest, highest int64, found bool, err error) {
	var b struct {
		N    int64 `db:"n"`
		Low  int64 `db:"low"`
		High int64 `db:"high"`
	}
	err = q.Get(ctx, &b, `SELECT COUNT(*) AS n, COALESCE(MIN(position), 0) AS low, COALESCE(MAX(position), 0) AS high
FROM turns WHERE conversation_id = ?`, conversationID)
	return b.Low, b.High, b.N > 0, err
}

// TaskOutline is the part of a task the history tools show of a turn's execution.
type TaskOutline struct {
	Key      string  `db:"task_key"`
	Kind     string  `db:"kind"`
	Status   string  `db:"status"`
	ToolName *string `db:"tool_name"`
	Title    *string `db:"title"`
}

// VisibleTaskOutlines lists up to limit tasks of a run whose visibility is not hidden, in
// creation order, and counts them all.
func VisibleTaskOutlines(ctx context.Context, q Querier, runID int64, limit int) ([]TaskOutline, int64, error) {
	var ts []TaskOutline
	if err := q.Select(ctx, &ts, `SELECT task_key, kind, status, tool_name, title FROM tasks
WHERE run_id = ? AND visibility <> 'hidden' ORDER BY id LIMIT ?`, runID, limit); err != nil {
		return nil, 0, err
	}
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM tasks WHERE run_id = ? AND visibility <> 'hidden'`, runID)
	return ts, n, err
}

// CommittedResponse answers the output of a run's newest completed mainline model round with
// text, or nil: the response text an unfinished turn has committed so far.
func CommittedResponse(ctx context.Context, q Querier, runID int64) (*string, error) {
	var out []string
	err := q.Select(ctx, &out, `SELECT output FROM tasks
WHERE run_id = ? AND kind = 'model_task' AND mainline = ? AND status = 'completed' AND output IS NOT NULL AND output <> ''
ORDER BY id DESC LIMIT 1`, runID, true)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return &out[0], nil
}

// ArchivedFilter selects conversations by status for a history search.
type ArchivedFilter string

// The archived filter values (docs/agent-tools.md#delegation-and-conversations).
const (
	ArchivedExclude ArchivedFilter = "exclude"
	ArchivedInclude ArchivedFilter = "include"
	ArchivedOnly    ArchivedFilter = "only"
)

// HistoryScope is the set of conversations a history search reads: one workspace's, by
// archived status, with or without the conversations that have a parent.
type HistoryScope struct {
	WorkspaceID      int64
	Archived         ArchivedFilter
	IncludeAuxiliary bool
}

func (s HistoryScope) where() (string, []any) {
	w := []string{`c.workspace_id = ?`}
	args := []any{s.WorkspaceID}
	switch s.Archived {
	case ArchivedOnly:
		w = append(w, `c.status = 'archived'`)
	case ArchivedInclude:
	default:
		w = append(w, `c.status <> 'archived'`)
	}
	if !s.IncludeAuxiliary {
		w = append(w, `c.parent_conversation_id IS NULL`)
	}
	return strings.Join(w, ` AND `), args
}

// ScanTurns lists up to limit turns of the scope's conversations in descending public id order
// (public ids are UUIDv7, so newest first), only those at or below atMost ("" for no bound; with
// inclusive false, strictly below). It is one bounded page of a search's scan.
func ScanTurns(ctx context.Context, q Querier, s HistoryScope, atMost string, inclusive bool, limit int) ([]HistoryTurn, error) {
	where, args := s.where()
	if atMost != "" {
		where += ` AND t.public_id ` + cmpBelow(inclusive) + ` ?`
		args = append(args, atMost)
	}
	args = append(args, limit)
	var ts []HistoryTurn
	err := q.Select(ctx, &ts, selectHistoryTurnSQL+` WHERE `+where+` ORDER BY t.public_id DESC LIMIT ?`, args...)
	return ts, err
}

// ScanTitledConversations lists up to limit titled conversations of the scope in descending
// public id order, only those at or below atMost as ScanTurns reads it.
func ScanTitledConversations(ctx context.Context, q Querier, s HistoryScope, atMost string, inclusive bool, limit int) ([]Conversation, error) {
	where, args := s.where()
	where += ` AND c.title IS NOT NULL`
	if atMost != "" {
		where += ` AND c.public_id ` + cmpBelow(inclusive) + ` ?`
		args = append(args, atMost)
	}
	args = append(args, limit)
	var cs []Conversation
	err := q.Select(ctx, &cs, selectConversationSQL+` WHERE `+where+` ORDER BY c.public_id DESC LIMIT ?`, args...)
	return cs, err
}

func cmpBelow(inclusive bool) string {
	if inclusive {
		return `<=`
	}
	return `<`
}
