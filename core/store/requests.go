package store

import (
	"context"
	"strings"
)

// ConversationRequest is one row of conversation_requests: an input a spawn or send call addressed
// to a conversation (docs/agent-tools.md#delegation-and-conversations), keyed by the call that made
// it.
type ConversationRequest struct {
	ID                   int64   `db:"id"`
	PublicID             string  `db:"public_id"`
	ReceiptKey           string  `db:"receipt_key"`
	RunID                int64   `db:"run_id"`
	CallKey              string  `db:"call_key"`
	Kind                 string  `db:"kind"`
	Delivery             string  `db:"delivery"`
	ConversationID       int64   `db:"conversation_id"`
	SenderConversationID int64   `db:"sender_conversation_id"`
	AuthorPublicID       string  `db:"author_public_id"`
	AnsweringAgentID     int64   `db:"answering_agent_id"`
	InputText            string  `db:"input_text"`
	Model                string  `db:"model"`
	TurnID               *int64  `db:"turn_id"`
	SteerRunID           *int64  `db:"steer_run_id"`
	DeliveredWith        *string `db:"delivered_with"`
	DeliverAt            *int64  `db:"deliver_at"`
	ReplyOwed            bool    `db:"reply_owed"`
	Status               string  `db:"status"`
	Receipt              string  `db:"receipt"`
	CreatedAt            int64   `db:"created_at"`
	ReleasedAt           *int64  `db:"released_at"`
}

const requestColumns = `id, public_id, receipt_key, run_id, call_key, kind, delivery, conversation_id, sender_conversation_id,
  author_public_id, answering_agent_id, input_text, model, turn_id, steer_run_id, delivered_with, deliver_at, reply_owed, status,
  receipt, created_at, released_at`

const selectRequestSQL = `SELECT ` + requestColumns + ` FROM conversation_requests`

// InsertConversationRequest stores r and sets its ID.
func InsertConversationRequest(ctx context.Context, q Querier, r *ConversationRequest) error {
	return q.Get(ctx, &r.ID, `INSERT INTO conversation_requests (public_id, receipt_key, run_id, call_key, kind, delivery,
  conversation_id, sender_conversation_id, author_public_id, answering_agent_id, input_text, model, turn_id, steer_run_id,
  delivered_with, deliver_at, reply_owed, status, receipt, created_at, released_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		r.PublicID, r.ReceiptKey, r.RunID, r.CallKey, r.Kind, r.Delivery, r.ConversationID, r.SenderConversationID,
		r.AuthorPublicID, r.AnsweringAgentID, r.InputText, r.Model, r.TurnID, r.SteerRunID, r.DeliveredWith, r.DeliverAt,
		r.ReplyOwed, r.Status, r.Receipt, r.CreatedAt, r.ReleasedAt)
}

// RequestByCall reads the request a call made, if any.
func RequestByCall(ctx context.Context, q Querier, runID int64, callKey string) (*ConversationRequest, error) {
	var r ConversationRequest
	if err := q.Get(ctx, &r, selectRequestSQL+` WHERE run_id = ? AND call_key = ?`, runID, callKey); err != nil {
		return nil, notFound(err)
	}
	return &r, nil
}

// RequestOfTurn reads the request a turn answers, if any.
func RequestOfTurn(ctx context.Context, q Querier, turnID int64) (*ConversationRequest, error) {
	var r ConversationRequest
	if err := q.Get(ctx, &r, selectRequestSQL+` WHERE turn_id = ?`, turnID); err != nil {
		return nil, notFound(err)
	}
	return &r, nil
}

// SetRequest updates a request's lifecycle fields.
func SetRequest(ctx context.Context, q Querier, r *ConversationRequest) error {
	_, err := q.Exec(ctx, `UPDATE conversation_requests SET status = ?, turn_id = ?, delivered_with = ?, released_at = ? WHERE id = ?`,
		r.Status, r.TurnID, r.DeliveredWith, r.ReleasedAt, r.ID)
	return err
}

// RequestsOfRunIn lists the requests a run addressed to a conversation, oldest first.
func RequestsOfRunIn(ctx context.Context, q Querier, runID, conversationID int64) ([]ConversationRequest, error) {
	var rs []ConversationRequest
	err := q.Select(ctx, &rs, selectRequestSQL+` WHERE run_id = ? AND conversation_id = ? ORDER BY id`, runID, conversationID)
	return rs, err
}

// DueRequests lists up to limit scheduled requests whose time has come, oldest time first.
func DueRequests(ctx context.Context, q Querier, now int64, limit int) ([]ConversationRequest, error) {
	var rs []ConversationRequest
	err := q.Select(ctx, &rs, selectRequestSQL+` WHERE status = 'pending' AND delivery = 'scheduled' AND deliver_at <= ?
ORDER BY deliver_at, id LIMIT ?`, now, limit)
	return rs, err
}

// PendingSteers lists the steers bound to a run that no round has carried yet, in arrival order.
func PendingSteers(ctx context.Context, q Querier, runID int64) ([]ConversationRequest, error) {
	var rs []ConversationRequest
	err := q.Select(ctx, &rs, selectRequestSQL+` WHERE steer_run_id = ? AND delivery = 'steering' AND status = 'pending' ORDER BY id`, runID)
	return rs, err
}

// SteersCarriedBy lists the steers a run's round carried, in arrival order.
func SteersCarriedBy(ctx context.Context, q Querier, runID int64, roundKey string) ([]ConversationRequest, error) {
	var rs []ConversationRequest
	err := q.Select(ctx, &rs, selectRequestSQL+` WHERE steer_run_id = ? AND delivery = 'steering' AND delivered_with = ? ORDER BY id`, runID, roundKey)
	return rs, err
}

// ChildByLabel finds the child of a conversation with this label (stored lowercased).
func ChildByLabel(ctx context.Context, q Querier, parentID int64, label string) (*Conversation, error) {
	var c Conversation
	if err := q.Get(ctx, &c, selectConversationSQL+` WHERE c.parent_conversation_id = ? AND c.label = ?`, parentID, label); err != nil {
		return nil, notFound(err)
	}
	return &c, nil
}

// ConversationHasLiveRun reports whether a run of the conversation is live (running or
// canceling): a reply is being produced there.
func ConversationHasLiveRun(ctx context.Context, q Querier, conversationID int64) (bool, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM runs WHERE conversation_id = ? AND status IN ('running', 'canceling')`, conversationID)
	return n > 0, err
}

// QueuedTurnsFrom counts a conversation's queued turns that came from another conversation
// (their sender_conversation_public_id).
func QueuedTurnsFrom(ctx context.Context, q Querier, conversationID int64, senderPublicID string) (int, error) {
	var n int
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM turns WHERE conversation_id = ? AND status = 'queued' AND sender_conversation_public_id = ?`,
		conversationID, senderPublicID)
	return n, err
}

// AgentByHandle finds an agent of a workspace by handle (case-insensitive), removed or not.
func AgentByHandle(ctx context.Context, q Querier, workspaceID int64, handle string) (*AgentRow, error) {
	var a AgentRow
	err := q.Get(ctx, &a, `SELECT `+agentColumns+`
FROM agents a JOIN users u ON u.id = a.steward_user_id JOIN workspaces w ON w.id = a.workspace_id
WHERE a.workspace_id = ? AND LOWER(a.handle) = ? ORDER BY a.removed_at IS NULL DESC, a.id LIMIT 1`, workspaceID, strings.ToLower(handle))
	if err != nil {
		return nil, notFound(err)
	}
	return &a, nil
}

// WorkspaceUserByRef reports whether a user of the workspace has this handle (case-insensitive)
// or public id.
func WorkspaceUserByRef(ctx context.Context, q Querier, workspaceID int64, handle, publicID string) (bool, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM workspace_members m JOIN users u ON u.id = m.user_id
WHERE m.workspace_id = ? AND (LOWER(u.handle) = ? OR CAST(u.public_id AS TEXT) = ?)`, workspaceID, strings.ToLower(handle), publicID)
	return n > 0, err
}

// OpenRequestObservers lists up to limit kernel rows observing a conversation request after
// afterID, in id order: spawn awaits and delegation rows still dispatched. The sweeper re-reads
// their requests, whose replies settle in another run without taking the observer's lock
// (docs/development.md#how-the-kernel-runs-work).
func OpenRequestObservers(ctx context.Context, q Querier, afterID int64, limit int) ([]Task, error) {
	var ts []Task
	err := q.Select(ctx, &ts, selectTaskSQL+` WHERE ((kind = 'await_task' AND await_kind = 'spawn') OR kind = 'delegation_task')
  AND status = 'dispatched' AND id > ? ORDER BY id LIMIT ?`, afterID, limit)
	return ts, err
}

// TurnByID reads a turn.
func TurnByID(ctx context.Context, q Querier, id int64) (*Turn, error) {
	var t Turn
	if err := q.Get(ctx, &t, selectTurnSQL+` WHERE t.id = ?`, id); err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// PreviousTurnModel is the model of the newest turn of a conversation that the agent's run
// answered, "" when it has not replied there yet.
func PreviousTurnModel(ctx context.Context, q Querier, conversationID int64, agentPublicID string) (string, error) {
	var ms []string
	err := q.Select(ctx, &ms, `SELECT t.model FROM turns t JOIN runs r ON r.id = t.run_id
WHERE t.conversation_id = ? AND r.answering_agent_public_id = ? ORDER BY t.position DESC LIMIT 1`, conversationID, agentPublicID)
	if err != nil || len(ms) == 0 {
		return "", err
	}
	return ms[0], nil
}

// ParentWaitingOn reports whether a conversation's parent is blocking on it: a waited spawn's await
// for the request that opened it is still parked
// (docs/agent-tools.md#delegation-and-conversations).
func ParentWaitingOn(ctx context.Context, q Querier, conversationID int64) (bool, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM conversation_requests r JOIN tasks t ON t.run_id = r.run_id AND t.task_key = r.call_key || '-spawn-1'
WHERE r.conversation_id = ? AND r.kind = 'spawn' AND t.kind = 'await_task' AND t.status = 'dispatched'`, conversationID)
	return n > 0, err
}

// RequestsOfRun lists every request a run made, oldest first.
func RequestsOfRun(ctx context.Context, q Querier, runID int64) ([]ConversationRequest, error) {
	var rs []ConversationRequest
	err := q.Select(ctx, &rs, selectRequestSQL+` WHERE run_id = ? ORDER BY id`, runID)
	return rs, err
}

// AgentByID reads an agent by internal id.
func AgentByID(ctx context.Context, q Querier, id int64) (*AgentRow, error) {
	var a AgentRow
	err := q.Get(ctx, &a, `SELECT `+agentColumns+`
FROM agents a JOIN users u ON u.id = a.steward_user_id JOIN workspaces w ON w.id = a.workspace_id WHERE a.id = ?`, id)
	if err != nil {
		return nil, notFound(err)
	}
	return &a, nil
}

// MarkSteersCarried records that a round's request carried these steers: they are posted, with
// the round's key, and no later seal carries them again.
func MarkSteersCarried(ctx context.Context, q Querier, ids []int64, roundKey string, now int64) error {
	for _, id := range ids {
		if _, err := q.Exec(ctx, `UPDATE conversation_requests SET status = 'posted', delivered_with = ?, released_at = ? WHERE id = ? AND status = 'pending'`,
			roundKey, now, id); err != nil {
			return err
		}
	}
	return nil
}

// TurnSteer is one steering text that landed into a turn's reply.
type TurnSteer struct {
	TurnID int64  `db:"turn_id"`
	Text   string `db:"input_text"`
}

// SteersOfTurns lists the steers carried into the replies of these turns (a steer lands in the
// turn whose run a round carried it with), in arrival order per turn. A steer still waiting for
// a seal has not landed and is not listed.
func SteersOfTurns(ctx context.Context, q Querier, turnIDs []int64) ([]TurnSteer, error) {
	if len(turnIDs) == 0 {
		return nil, nil
	}
	query, args, err := expandIn(`SELECT t.id AS turn_id, r.input_text FROM conversation_requests r JOIN turns t ON t.run_id = r.steer_run_id
WHERE t.id IN (?) AND r.delivery = 'steering' AND r.delivered_with IS NOT NULL ORDER BY r.id`, turnIDs)
	if err != nil {
		return nil, err
	}
	var out []TurnSteer
	err = q.Select(ctx, &out, query, args...)
	return out, err
}
