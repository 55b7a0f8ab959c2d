package conversations

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// SessionRead is a checked session_read request (docs/agent-tools.md#delegation-and-conversations):
// at most one of AroundTurnID, After and Before is set.
type SessionRead struct {
	SessionID        string
	AroundTurnID     string // "" for none
	After, Before    *int64
	Limit            int
	IncludeExecution bool
}

// SessionWindow is one page of a conversation's visible history.
type SessionWindow struct {
	ConversationPublicID string
	Title                *string
	// Turns are in ascending position.
	Turns []HistoryTurn
	// BudgetOrder lists indices of Turns in the order the page's text budget is spent: from the
	// window's near edge (the target and then its nearest neighbours for around_turn_id, oldest
	// first for after_position, newest first otherwise).
	BudgetOrder []int
	// HasOlder and HasNewer say whether visible turns exist beyond the page.
	HasOlder, HasNewer bool
}

// ReadSession reads one window of a conversation's visible history for the run's principal
// (docs/agent-tools.md#delegation-and-conversations), in the calling row's transaction. It answers
// ErrConversationUnreadable for a conversation the principal may not read now, and
// ErrTurnNotVisible for an around_turn_id outside the visible timeline. Archived conversations
// stay readable.
//
// Visibility: the turn model of this version has no tombstoned, hidden or concealed turns and no
// compaction summaries, so every turn of the conversation is visible, unfinished ones included;
// when those kinds of turns arrive, the store's history queries exclude them and the distances
// here stay counted in visible turns, never in position numbers.
//
// An empty page still says what lies beyond its cursor: has_older is true when visible turns
// exist at or below an after_position cursor, has_newer when they exist at or above a
// before_position cursor.
func ReadSession(ctx context.Context, call *runs.KernelCall, r *SessionRead) (*SessionWindow, error) {
	q := call.Tx
	c, err := readableConversation(ctx, call, r.SessionID)
	if err != nil {
		return nil, err
	}
	w := &SessionWindow{ConversationPublicID: c.PublicID, Title: c.Title}
	var rows []store.HistoryTurn // ascending
	var order []string           // public ids, budget order
	switch {
	case r.AroundTurnID != "":
		rows, order, err = aroundWindow(ctx, q, c.ID, strings.ToLower(r.AroundTurnID), r.Limit)
	case r.After != nil:
		rows, err = store.HistoryTurnsAfter(ctx, q, c.ID, *r.After, r.Limit)
		for i := range rows {
			order = append(order, rows[i].PublicID)
		}
	default:
		rows, err = store.HistoryTurnsBefore(ctx, q, c.ID, r.Before, r.Limit)
		for i := range rows {
			order = append(order, rows[i].PublicID)
		}
		reverse(rows)
	}
	if err != nil {
		return nil, err
	}
	low, high, some, err := store.TurnPositionBounds(ctx, q, c.ID)
	if err != nil {
		return nil, err
	}
	if len(rows) > 0 {
		w.HasOlder = some && low < rows[0].Position
		w.HasNewer = some && high > rows[len(rows)-1].Position
	} else if some {
		w.HasOlder = r.After != nil && low <= *r.After
		w.HasNewer = r.Before != nil && high >= *r.Before
	}
	if w.Turns, err = historyTurns(ctx, q, rows); err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i := range rows {
		index[rows[i].PublicID] = i
	}
	for _, id := range order {
		w.BudgetOrder = append(w.BudgetOrder, index[id])
	}
	if r.IncludeExecution {
		for i := range rows {
			if w.Turns[i].Execution, err = turnExecution(ctx, q, &rows[i]); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// aroundWindow is the target turn and its nearest visible neighbours up to limit, at equal
// distance the newer first; rows ascending, order the selection order.
func aroundWindow(ctx context.Context, q store.Querier, conversationID int64, turnID string, limit int) ([]store.HistoryTurn, []string, error) {
	if !store.IsPublicID(turnID) {
		return nil, nil, ErrTurnNotVisible
	}
	target, err := store.HistoryTurnByPublicID(ctx, q, conversationID, turnID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrTurnNotVisible
	}
	if err != nil {
		return nil, nil, err
	}
	p := target.Position
	older, err := store.HistoryTurnsBefore(ctx, q, conversationID, &p, limit-1)
	if err != nil {
		return nil, nil, err
	}
	newer, err := store.HistoryTurnsAfter(ctx, q, conversationID, p, limit-1)
	if err != nil {
		return nil, nil, err
	}
	rows := []store.HistoryTurn{*target}
	for d := 0; len(rows) < limit && (d < len(newer) || d < len(older)); d++ {
		if d < len(newer) {
			rows = append(rows, newer[d])
		}
		if d < len(older) && len(rows) < limit {
			rows = append(rows, older[d])
		}
	}
	order := make([]string, len(rows))
	for i := range rows {
		order[i] = rows[i].PublicID
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Position < rows[j].Position })
	return rows, order, nil
}

// turnExecution is a turn's run's persisted progress: its status and its tasks that are not
// hidden, in creation order, at most MaxExecutionTasks. Only stored facts are read.
func turnExecution(ctx context.Context, q store.Querier, t *store.HistoryTurn) (*TurnExecution, error) {
	tasks, total, err := store.VisibleTaskOutlines(ctx, q, t.RunID, MaxExecutionTasks)
	if err != nil {
		return nil, err
	}
	if tasks == nil {
		tasks = []store.TaskOutline{}
	}
	return &TurnExecution{RunPublicID: t.RunPublicID, Status: t.RunStatus, Tasks: tasks, TasksOmitted: total - int64(len(tasks))}, nil
}

func reverse[T any](xs []T) {
	for i, j := 0, len(xs)-1; i < j; i, j = i+1, j-1 {
		xs[i], xs[j] = xs[j], xs[i]
	}
}
