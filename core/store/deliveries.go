package store

import (
	"context"
)

// HeldDeliveries lists the held results of a conversation
// (docs/agent-tools.md#delegation-and-conversations): the final rounds of conversation-lifetime
// detached branches and the settled replies of spawns and sends (delegation rows), in the
// conversation's runs other than exceptRunID, that have settled and that no request or
// kernel-authored turn has carried, oldest settlement first. A branch round that continued is never
// final: a newer round of its lineage exists.
func HeldDeliveries(ctx context.Context, q Querier, conversationID, exceptRunID int64) ([]Task, error) {
	var ts []Task
	err := q.Select(ctx, &ts, `SELECT `+taskColumnsOfT+` FROM tasks t JOIN runs r ON r.id = t.run_id
WHERE r.conversation_id = ? AND r.id <> ? AND t.mainline = ? AND t.detached = ?
  AND t.lifetime = 'conversation' AND t.delivered_with IS NULL AND t.result_delivered_at IS NULL
  AND t.status IN ('completed', 'failed', 'canceled', 'timed_out', 'uncertain', 'skipped')
  AND (t.kind = 'delegation_task' OR (t.kind = 'model_task'
  AND NOT EXISTS (SELECT 1 FROM tasks n WHERE n.run_id = t.run_id AND n.lineage_root = t.lineage_root
    AND n.kind = 'model_task' AND n.round_number > t.round_number)))
ORDER BY t.completed_at, t.id`, conversationID, exceptRunID, false, true)
	return ts, err
}

// OpenWaits lists up to limit kernel-held wait awaits still observing, after afterID, in id order:
// the sweeper re-reads their targets, which may live in another run whose settle never takes the
// observer's lock (docs/development.md#how-the-kernel-runs-work).
func OpenWaits(ctx context.Context, q Querier, afterID int64, limit int) ([]Task, error) {
	var ts []Task
	err := q.Select(ctx, &ts, selectTaskSQL+` WHERE kind = 'await_task' AND await_kind = 'wait' AND status = 'dispatched' AND id > ?
ORDER BY id LIMIT ?`, afterID, limit)
	return ts, err
}

// InboxForMember lists the member inbox (docs/api.md#the-inbox), oldest first: held approvals and
// open asks. A user sees the approvals of runs it created or whose answering agent it stewards, and
// the asks addressed to it (addressed is its stored addressee, compared byte for byte); an agent
// sees both kinds on every run it answers or created, whoever they are addressed to.
func InboxForMember(ctx context.Context, q Querier, kind, publicID string, addressed AddressedMember, afterID int64, limit int) ([]HeldRow, error) {
	var where string
	args := []any{}
	if kind == KindAgent {
		where = `t.status IN ('needs_approval', 'awaiting_input')
  AND (r.answering_agent_public_id = ? OR (r.created_by_kind = 'agent' AND r.created_by_public_id = ?))`
		args = append(args, publicID, publicID)
	} else {
		where = `((t.status = 'needs_approval' AND ((r.created_by_kind = 'user' AND r.created_by_public_id = ?) OR (r.created_by_kind <> 'user' AND EXISTS (
  SELECT 1 FROM agents a JOIN users u ON u.id = a.steward_user_id WHERE CAST(a.public_id AS TEXT) = r.answering_agent_public_id AND CAST(u.public_id AS TEXT) = ?))))
  OR (t.status = 'awaiting_input' AND t.addressed_member = ?))`
		args = append(args, publicID, publicID, addressed)
	}
	args = append(args, afterID, limit)
	var rows []HeldRow
	err := q.Select(ctx, &rows, `SELECT `+taskColumnsOfT+`, r.public_id AS run_public_id, w.public_id AS workspace_public_id,
  c.public_id AS conversation_public_id
FROM tasks t JOIN runs r ON r.id = t.run_id JOIN workspaces w ON w.id = r.workspace_id LEFT JOIN conversations c ON c.id = r.conversation_id
WHERE `+where+` AND t.id > ? ORDER BY t.id LIMIT ?`, args...)
	return rows, err
}
