package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// Attachment is an input upload as a turn or a model step keeps it: the upload descriptor's
// lasting facts (docs/api.md#uploads), as rows store it.
type Attachment = store.Attachment

// resultRefs are settled calls' media links (uploads.Service.ResultRefs), per row, in block order.
// Only completed results carry media: a call that failed pairs with its <tool_use_error>,
// whatever it stored.
func (e *Engine) resultRefs(ctx context.Context, q store.Querier, rows []*store.Task) ([][]uploads.Ref, error) {
	linked := make([]uploads.Linked, len(rows))
	for i, row := range rows {
		if row != nil && row.Status == StatusCompleted && row.Content != nil {
			linked[i] = uploads.Linked{Source: row.Key, Content: []byte(*row.Content)}
		}
	}
	return e.uploads.ResultRefs(ctx, q, linked)
}

// rerenderTurn renders an earlier turn's entries again for this request's model
// (docs/agent-tools.md#what-a-model-reads, docs/development.md#how-the-kernel-runs-work): history
// carries earlier turns' attachments, and the same upload may be an attachment part for one model
// and an index line for another. entries are the turn's lineage as its last sealed round stored
// them, after its own history. Each upload is decided again, in request order, at the place the
// assembly put it and from typed data: the opening entry (the one user entry before the first
// answer with more than one part) ends with the turn's input attachments, from its stored list;
// the user entry right after a round's results carries the media of that round's calls, each a
// stored attachment part's own fields or, where an index line stands, the call rows' links and
// their uploads (read once, when an index line needs them). Text is never read back as an
// upload. changed[i] reports whether entries[i] now differs, so that an unchanged model keeps the
// bytes.
func (e *Engine) rerenderTurn(ctx context.Context, q store.Querier, g *uploads.Gate, turn *store.Turn, entries []model.Entry) ([]bool, error) {
	changed := make([]bool, len(entries))
	inputs := uploads.InputRefs(turn.InputAttachments)
	var err error
	var media map[int64][]uploads.Ref // by round number: its calls' media; read on first need
	answered, round := false, int64(0)
	for i := range entries {
		en := &entries[i]
		if en.Role == model.RoleUser && !answered && len(inputs) > 0 && len(en.Content) > len(inputs) {
			answered = true // the opening entry: no later entry holds inputs
			if changed[i], err = g.Rerender(ctx, en.Content[len(en.Content)-len(inputs):], inputs); err != nil {
				return nil, err
			}
			continue
		}
		if en.Role != model.RoleAssistant {
			continue
		}
		answered = true
		if len(en.ToolCalls) == 0 {
			continue
		}
		round++
		j := i + len(en.ToolCalls) + 1
		if j >= len(entries) || entries[j].Role != model.RoleUser {
			continue
		}
		parts := entries[j].Content
		refs := make([]uploads.Ref, 0, len(parts))
		for _, p := range parts {
			if p.Type == model.PartAttachment {
				refs = append(refs, uploads.PartRef(p))
			}
		}
		if len(refs) < len(parts) {
			// An index line, or no media entry at all: the round's rows say which.
			if media == nil {
				if media, err = e.lineageMedia(ctx, q, turn.RunID); err != nil {
					return nil, err
				}
			}
			if refs = media[round]; len(refs) != len(parts) {
				continue
			}
		}
		if changed[j], err = g.Rerender(ctx, parts, refs); err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// lineageMedia is, by round number, the media a turn's rounds that answered with calls carried
// to their next round: their calls' media links in call and block order (resultRefs).
func (e *Engine) lineageMedia(ctx context.Context, q store.Querier, runID int64) (map[int64][]uploads.Ref, error) {
	rows, err := store.LineageRows(ctx, q, runID, "r1")
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]*store.Task, len(rows))
	for i := range rows {
		byKey[rows[i].Key] = &rows[i]
	}
	var rounds []int64
	var calls []*store.Task
	for i := range rows {
		r := &rows[i]
		if r.Kind != KindModel || r.LineageRoot != "r1" || r.AnswerCalls == nil {
			continue
		}
		for _, c := range r.AnswerCalls {
			rounds, calls = append(rounds, r.RoundNumber), append(calls, byKey[c.TaskKey])
		}
	}
	refs, err := e.resultRefs(ctx, q, calls)
	if err != nil {
		return nil, err
	}
	out := map[int64][]uploads.Ref{}
	for i, r := range refs {
		out[rounds[i]] = append(out[rounds[i]], r...)
	}
	return out, nil
}
