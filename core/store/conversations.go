package store

import (
	"context"
	"fmt"
	"strings"
)

// Conversation is one row of conversations (docs/api.md#conversations).
type Conversation struct {
	ID                            int64   `db:"id"`
	PublicID                      string  `db:"public_id"`
	WorkspaceID                   int64   `db:"workspace_id"`
	WorkspacePublicID             string  `db:"workspace_public_id"`
	Title                         *string `db:"title"`
	AnsweringAgentID              int64   `db:"answering_agent_id"`
	AnsweringAgentPublicID        string  `db:"answering_agent_public_id"`
	CreatedByKind                 string  `db:"created_by_kind"`
	CreatedByPublicID             string  `db:"created_by_public_id"`
	DefaultRunnerExecutorPublicID *string `db:"default_runner_executor_public_id"`
	ParentConversationID          *int64  `db:"parent_conversation_id"`
	Label                         *string `db:"label"`
	Status                        string  `db:"status"`
	CreatedAt                     int64   `db:"created_at"`
	UpdatedAt                     int64   `db:"updated_at"`
	ArchivedAt                    *int64  `db:"archived_at"`
}

// InsertConversation stores c and sets its ID.
func InsertConversation(ctx context.Context, q Querier, c *Conversation) error {
	return q.Get(ctx, &c.ID, `INSERT INTO conversations (public_id, workspace_id, title, answering_agent_id, created_by_kind,
  created_by_public_id, default_runner_executor_public_id, parent_conversation_id, label, status, created_at, updated_at, archived_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		c.PublicID, c.WorkspaceID, c.Title, c.AnsweringAgentID, c.CreatedByKind, c.CreatedByPublicID,
		c.DefaultRunnerExecutorPublicID, c.ParentConversationID, c.Label, c.Status, c.CreatedAt, c.UpdatedAt, c.ArchivedAt)
}

const selectConversationSQL = `SELECT c.id, c.public_id, c.workspace_id, w.public_id AS workspace_public_id, c.title,
  c.answering_agent_id, a.public_id AS answering_agent_public_id, c.created_by_kind, c.created_by_public_id,
  c.default_runner_executor_public_id, c.parent_conversation_id, c.label, c.status, c.created_at, c.updated_at, c.archived_at
FROM conversations c JOIN workspaces w ON w.id = c.workspace_id JOIN agents a ON a.id = c.answering_agent_id`

// ConversationByPublicID reads a conversation of any workspace.
func ConversationByPublicID(ctx context.Context, q Querier, publicID string) (*Conversation, error) {
	var c Conversation
	if err := q.Get(ctx, &c, selectConversationSQL+` WHERE c.public_id = ?`, ID(publicID)); err != nil {
		return nil, notFound(err)
	}
	return &c, nil
}

// ConversationByID reads a conversation.
func ConversationByID(ctx context.Context, q Querier, id int64) (*Conversation, error) {
	var c Conversation
	if err := q.Get(ctx, &c, selectConversationSQL+` WHERE c.id = ?`, id); err != nil {
		return nil, notFound(err)
	}
	return &c, nil
}

// ConversationCreator reads who created a conversation.
func ConversationCreator(ctx context.Context, q Querier, id int64) (Member, error) {
	var c struct {
		Kind string `db:"created_by_kind"`
		ID   string `db:"created_by_public_id"`
	}
	if err := q.Get(ctx, &c, `SELECT created_by_kind, created_by_public_id FROM conversations WHERE id = ?`, id); err != nil {
		return Member{}, notFound(err)
	}
	return Member{Kind: c.Kind, PublicID: c.ID}, nil
}

// LockConversation takes a conversation's lock, first in the lock order
// (docs/development.md#how-the-kernel-runs-work).
func LockConversation(ctx context.Context, tx *Tx, id int64) (*Conversation, error) {
	if tx.Dialect() == Postgres {
		if _, err := tx.Exec(ctx, `SELECT id FROM conversations WHERE id = ? FOR UPDATE`, id); err != nil {
			return nil, fmt.Errorf("store: lock conversation %d: %w", id, err)
		}
	}
	return ConversationByID(ctx, tx, id)
}

// SetConversation updates a conversation's status fields.
func SetConversation(ctx context.Context, q Querier, id int64, status string, updatedAt int64, archivedAt *int64) error {
	_, err := q.Exec(ctx, `UPDATE conversations SET status = ?, updated_at = ?, archived_at = ? WHERE id = ?`, status, updatedAt, archivedAt, id)
	return err
}

// ConversationsOfWorkspace lists conversations newest first, with an optional status and an id
// cursor (only smaller ids).
func ConversationsOfWorkspace(ctx context.Context, q Querier, workspaceID int64, status string, beforeID int64, limit int) ([]Conversation, error) {
	where := []string{`c.workspace_id = ?`}
	args := []any{workspaceID}
	if status != "" {
		where = append(where, `c.status = ?`)
		args = append(args, status)
	}
	if beforeID > 0 {
		where = append(where, `c.id < ?`)
		args = append(args, beforeID)
	}
	args = append(args, limit)
	var cs []Conversation
	err := q.Select(ctx, &cs, selectConversationSQL+` WHERE `+strings.Join(where, " AND ")+` ORDER BY c.id DESC LIMIT ?`, args...)
	return cs, err
}

// Turn is one row of turns (docs/api.md#conversations).
type Turn struct {
	ID                         int64   `db:"id"`
	PublicID                   string  `db:"public_id"`
	ConversationID             int64   `db:"conversation_id"`
	Position                   int64   `db:"position"`
	AuthorKind                 string  `db:"author_kind"`
	AuthorPublicID             *string `db:"author_public_id"`
	SenderConversationPublicID *string `db:"sender_conversation_public_id"`
	InputText                  string  `db:"input_text"`
	// InputAttachments is never nil: a turn without attachments stores [].
	InputAttachments Attachments `db:"input_attachments"`
	ToolNames        Strings     `db:"tool_names"`
	Model            string      `db:"model"`
	Status           string      `db:"status"`
	RunID            int64       `db:"run_id"`
	RunPublicID      string      `db:"run_public_id"`
	AnswerTaskKey    *string     `db:"answer_task_key"`
	AnswerText       *string     `db:"answer_text"`
	FailureKey       *string     `db:"failure_key"`
	FailureDetail    *string     `db:"failure_detail"`
	CreatedAt        int64       `db:"created_at"`
	StartedAt        *int64      `db:"started_at"`
	CompletedAt      *int64      `db:"completed_at"`
}

// InsertTurn stores t and sets its ID.
func InsertTurn(ctx context.Context, q Querier, t *Turn) error {
	return q.Get(ctx, &t.ID, `INSERT INTO turns (public_id, conversation_id, position, author_kind, author_public_id,
  sender_conversation_public_id, input_text, input_attachments, tool_names, model, status, run_id, answer_task_key, answer_text,
  failure_key, failure_detail, created_at, started_at, completed_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		t.PublicID, t.ConversationID, t.Position, t.AuthorKind, t.AuthorPublicID, t.SenderConversationPublicID, t.InputText,
		t.InputAttachments, t.ToolNames, t.Model, t.Status, t.RunID, t.AnswerTaskKey, t.AnswerText, t.FailureKey, t.FailureDetail,
		t.CreatedAt, t.StartedAt, t.CompletedAt)
}

const selectTurnSQL = `SELECT t.id, t.public_id, t.conversation_id, t.position, t.author_kind, t.author_public_id,
  t.sender_conversation_public_id, t.input_text, t.input_attachments, t.tool_names, t.model, t.status, t.run_id,
  r.public_id AS run_public_id, t.answer_task_key, t.answer_text, t.failure_key, t.failure_detail, t.created_at, t.started_at,
  t.completed_at
FROM turns t JOIN runs r ON r.id = t.run_id`

// TurnOfRun reads the turn a conversation-hosted run answers.
func TurnOfRun(ctx context.Context, q Querier, runID int64) (*Turn, error) {
	var t Turn
	if err := q.Get(ctx, &t, selectTurnSQL+` WHERE t.run_id = ?`, runID); err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// TurnsOfConversation lists turns in ascending position: all of them below beforePosition
// (0: no bound), the newest limit of them when limit > 0.
func TurnsOfConversation(ctx context.Context, q Querier, conversationID, beforePosition int64, limit int) ([]Turn, error) {
	where := `t.conversation_id = ?`
	args := []any{conversationID}
	if beforePosition > 0 {
		where += ` AND t.position < ?`
		args = append(args, beforePosition)
	}
	q2 := selectTurnSQL + ` WHERE ` + where + ` ORDER BY t.position DESC`
	if limit > 0 {
		q2 += ` LIMIT ?`
		args = append(args, limit)
	}
	var ts []Turn
	if err := q.Select(ctx, &ts, q2, args...); err != nil {
		return nil, err
	}
	for i, j := 0, len(ts)-1; i < j; i, j = i+1, j-1 {
		ts[i], ts[j] = ts[j], ts[i]
	}
	return ts, nil
}

// SetTurn updates a turn's lifecycle fields.
func SetTurn(ctx context.Context, q Querier, t *Turn) error {
	_, err := q.Exec(ctx, `UPDATE turns SET status = ?, answer_task_key = ?, answer_text = ?, failure_key = ?, failure_detail = ?,
  started_at = ?, completed_at = ? WHERE id = ?`, t.Status, t.AnswerTaskKey, t.AnswerText, t.FailureKey, t.FailureDetail,
		t.StartedAt, t.CompletedAt, t.ID)
	return err
}

// IsWorkspaceMember reports whether a member (user or agent, by public id) belongs to a
// workspace; a removed agent does not.
func IsWorkspaceMember(ctx context.Context, q Querier, workspaceID int64, kind, publicID string) (bool, error) {
	var n int64
	var err error
	switch kind {
	case KindUser:
		err = q.Get(ctx, &n, `SELECT COUNT(*) FROM workspace_members m JOIN users u ON u.id = m.user_id
WHERE m.workspace_id = ? AND CAST(u.public_id AS TEXT) = ?`, workspaceID, publicID)
	case KindAgent:
		err = q.Get(ctx, &n, `SELECT COUNT(*) FROM agents WHERE workspace_id = ? AND CAST(public_id AS TEXT) = ? AND removed_at IS NULL`, workspaceID, publicID)
	default:
		return false, nil
	}
	return n > 0, err
}

// OpenTurns lists a conversation's running and queued turns in position order.
func OpenTurns(ctx context.Context, q Querier, conversationID int64) ([]Turn, error) {
	var ts []Turn
	err := q.Select(ctx, &ts, selectTurnSQL+` WHERE t.conversation_id = ? AND t.status IN ('running', 'queued') ORDER BY t.position`, conversationID)
	return ts, err
}

// OldestQueuedTurn reads a conversation's oldest queued turn.
func OldestQueuedTurn(ctx context.Context, q Querier, conversationID int64) (*Turn, error) {
	var t Turn
	if err := q.Get(ctx, &t, selectTurnSQL+` WHERE t.conversation_id = ? AND t.status = 'queued' ORDER BY t.position LIMIT 1`, conversationID); err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// NextTurnPosition is the position the next turn of a conversation takes.
func NextTurnPosition(ctx context.Context, q Querier, conversationID int64) (int64, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COALESCE(MAX(position), 0) + 1 FROM turns WHERE conversation_id = ?`, conversationID)
	return n, err
}
