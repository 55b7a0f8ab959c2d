package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/projection"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// sealed is a round's request as assembled: the stored pieces and what the provider receives.
type sealed struct {
	parts        store.SealedParts
	entries      []model.Entry
	tools        []model.ToolSchema
	delivered    []int64 // task ids whose results this request carries for the first time
	steers       []int64 // conversation requests (steers) this request carries for the first time
	historyCount int64
	baseID       int64
	baseCount    int
}

// encodeEntry is an entry's stored bytes: the compact JSON of
// docs/development.md#how-the-kernel-runs-work, keys in the order shown there, never re-sorted.
func encodeEntry(e model.Entry) ([]byte, error) { return e.MarshalJSON() }

// assemble builds the sealed request of a model round
// (docs/development.md#how-the-kernel-runs-work): system, the opening user entry with the results
// it reads, then for a continuation the previous round's request followed by its answer and
// results. A continuation's request is its predecessor's plus the new entries, byte for byte, so
// the stored entries are shared. detached is whether the run held a detached row when the round
// was claimed (store.Claimed.Detached): without one there is no unpaired result to carry, and
// the run's rows are not read for them.
func (e *Engine) assemble(ctx context.Context, q store.Querier, run *store.Run, t *store.Task, ts *projection.Round, m model.Model, detached bool) (*sealed, error) {
	s := &sealed{}
	gate := e.uploads.Gate(q, m)
	tools, err := model.RequestOptions{Tools: ts.Offered(target(m)).Tools}.Schemas()
	if err != nil {
		return nil, err
	}
	s.tools = tools
	var entryBytes [][]byte
	add := func(en model.Entry) error {
		b, err := encodeEntry(en)
		if err != nil {
			return err
		}
		s.entries = append(s.entries, en)
		entryBytes = append(entryBytes, b)
		return nil
	}
	if t.Key == t.LineageRoot {
		if t.Instructions != nil && *t.Instructions != "" {
			if err := add(model.Entry{Role: model.RoleSystem, Content: []model.Part{{Type: model.PartText, Text: *t.Instructions}}}); err != nil {
				return nil, err
			}
		}
		histAt := len(entryBytes)
		var hist []turnSegment
		if run.ConversationID != nil && t.Mainline {
			var err error
			if hist, err = e.history(ctx, q, run, m, gate); err != nil {
				return nil, err
			}
		}
		if run.ConversationID != nil && t.Mainline {
			// A conversation turn's first round reads the held passive deliveries before its
			// input (docs/development.md#how-the-kernel-runs-work).
			held, ids, err := e.heldEntries(ctx, q, run)
			if err != nil {
				return nil, err
			}
			for _, en := range held {
				if err := add(en); err != nil {
					return nil, err
				}
			}
			s.delivered = append(s.delivered, ids...)
		}
		for _, k := range t.Results {
			text, id, err := e.resultDelivery(ctx, q, run, k)
			if err != nil {
				return nil, err
			}
			if id != 0 {
				s.delivered = append(s.delivered, id)
			}
			if err := add(model.Entry{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: text}}}); err != nil {
				return nil, err
			}
		}
		var parts []model.Part
		if block := ts.SkillsBlock(); block != "" {
			parts = append(parts, model.Part{Type: model.PartText, Text: block})
		}
		parts = append(parts, model.Part{Type: model.PartText, Text: deref(t.Prompt)})
		if t.Attachments != nil {
			input, err := gate.RenderAll(ctx, uploads.InputRefs(t.Attachments))
			if err != nil {
				return nil, err
			}
			parts = append(parts, input...)
		}
		if err := add(model.Entry{Role: model.RoleUser, Content: parts}); err != nil {
			return nil, err
		}
		// History goes after the system entry; the oldest whole turns are dropped until the
		// request fits the model's window less its output (docs/development.md#how-the-kernel-runs-work).
		budget := int64(-1)
		if m.ContextWindow != nil {
			budget = *m.ContextWindow
			if m.MaxOutputTokens != nil {
				budget -= *m.MaxOutputTokens
			}
		}
		reported, haveReported, err := reportedEstimate(hist, s.entries[histAt:], m)
		if err != nil {
			return nil, err
		}
		for {
			var hEntries []model.Entry
			var hBytes [][]byte
			for _, seg := range hist {
				hEntries = append(hEntries, seg.entries...)
				hBytes = append(hBytes, seg.bytes...)
			}
			all := append(append(append([]model.Entry{}, s.entries[:histAt]...), hEntries...), s.entries[histAt:]...)
			est, err := model.EstimateTokens(all, s.tools)
			if err != nil {
				return nil, err
			}
			if haveReported {
				// The first try keeps every turn: the provider's own count of the previous
				// round stands for everything up to its answer.
				est, haveReported = reported, false
			}
			if budget < 0 || est <= budget {
				s.entries = all
				entryBytes = append(append(append([][]byte{}, entryBytes[:histAt]...), hBytes...), entryBytes[histAt:]...)
				s.historyCount = int64(histAt + len(hBytes))
				break
			}
			if len(hist) == 0 {
				return nil, &TaskError{Key: model.KeyContextOverflow,
					Detail: fmt.Sprintf("the turn alone is about %d tokens; the model takes %d", est, budget)}
			}
			hist = hist[1:]
		}
	} else {
		prev, rows, parts, err := store.LineageRoundAndCalls(ctx, q, run.ID, t.LineageRoot, t.RoundNumber-1)
		if err != nil {
			return nil, fmt.Errorf("runs: round %s: previous round: %w", t.Key, err)
		}
		if prev.SealedRequestID == nil {
			return nil, fmt.Errorf("runs: round %s: previous round %s was never sealed", t.Key, prev.Key)
		}
		s.baseID, s.baseCount = *prev.SealedRequestID, len(parts.Entries)
		s.historyCount = deref(prev.HistoryEntries)
		for _, b := range parts.Entries {
			var en model.Entry
			if err := json.Unmarshal(b, &en); err != nil {
				return nil, fmt.Errorf("runs: stored entry: %w", err)
			}
			s.entries = append(s.entries, en)
			entryBytes = append(entryBytes, b)
		}
		gate.Count(s.entries)
		calls := prev.AnswerCalls
		// A lineage keeps its model: the previous round's provider blocks always go back.
		content, err := answerParts(prev, m.Ref)
		if err != nil {
			return nil, err
		}
		asst := model.Entry{Role: model.RoleAssistant, Content: content}
		for _, c := range calls {
			asst.ToolCalls = append(asst.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		if err := add(asst); err != nil {
			return nil, err
		}
		byKey := map[string]*store.Task{}
		for i := range rows {
			byKey[rows[i].Key] = &rows[i]
		}
		for _, c := range calls {
			row := byKey[c.TaskKey]
			if row == nil {
				return nil, fmt.Errorf("runs: round %s: call row %s missing", t.Key, c.TaskKey)
			}
			text, isErr := pairedText(row)
			en := model.Entry{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, IsError: isErr, Content: []model.Part{}}
			if text != "" {
				en.Content = []model.Part{{Type: model.PartText, Text: text}}
			}
			if err := add(en); err != nil {
				return nil, err
			}
			if row.ResultDeliveredAt == nil {
				s.delivered = append(s.delivered, row.ID)
			}
		}
		// The round's media links ride in one user message after its last result
		// (docs/agent-tools.md#what-a-model-reads).
		called := make([]*store.Task, len(calls))
		for i, c := range calls {
			called[i] = byKey[c.TaskKey]
		}
		perCall, err := e.resultRefs(ctx, q, called)
		if err != nil {
			return nil, err
		}
		media, err := gate.RenderAll(ctx, slices.Concat(perCall...))
		if err != nil {
			return nil, err
		}
		if len(media) > 0 {
			if err := add(model.Entry{Role: model.RoleUser, Content: media}); err != nil {
				return nil, err
			}
		}
	}
	if t.Mainline && detached {
		// Unpaired branch results that settled before this seal and were never delivered
		// (docs/development.md#how-the-kernel-runs-work); later rounds re-send them at this same
		// position.
		unpaired, ids, err := e.unpairedEntries(ctx, q, run)
		if err != nil {
			return nil, err
		}
		for _, en := range unpaired {
			if err := add(en); err != nil {
				return nil, err
			}
		}
		s.delivered = append(s.delivered, ids...)
	}
	if t.Mainline && run.ConversationID != nil {
		// Steers that landed before this seal, in arrival order, after the unpaired results
		// (docs/development.md#how-the-kernel-runs-work;
		// docs/agent-tools.md#delegation-and-conversations).
		steers, err := store.PendingSteers(ctx, q, run.ID)
		if err != nil {
			return nil, err
		}
		for i := range steers {
			if err := add(userText(steers[i].InputText)); err != nil {
				return nil, err
			}
			s.steers = append(s.steers, steers[i].ID)
		}
	}
	s.parts = store.SealedParts{Entries: entryBytes, BaseID: s.baseID, BaseCount: s.baseCount}
	return s, nil
}

// pairedText is the text a call's tool entry carries and its error flag
// (docs/agent-tools.md#what-a-model-reads).
func pairedText(t *store.Task) (string, bool) {
	if t.Status == StatusCompleted {
		return deref(t.Output), deref(t.IsError)
	}
	return ToolUseError(deref(t.ErrorKey), deref(t.ErrorDetail)), true
}

// resultDelivery renders the <task_result> a step reads for key, and the id of the row whose
// result it delivers (0 when already delivered). A model source is read as its lineage: its
// final round's status and body under its opening prompt.
func (e *Engine) resultDelivery(ctx context.Context, q store.Querier, run *store.Run, key string) (string, int64, error) {
	src, err := store.TaskByKey(ctx, q, run.ID, key)
	if err != nil {
		return "", 0, fmt.Errorf("runs: result %s: %w", key, err)
	}
	tr := envelope.TaskResult{Key: key}
	final := src
	if src.Kind == KindModel {
		tr.ModelSource = true
		root, err := store.TaskByKey(ctx, q, run.ID, src.LineageRoot)
		if err != nil {
			return "", 0, err
		}
		tr.ModelPrompt = deref(root.Prompt)
		last, err := store.LastLineageRound(ctx, q, run.ID, src.LineageRoot)
		if err != nil {
			return "", 0, err
		}
		final = last
	} else {
		tr.ToolName = deref(src.ToolName)
		if src.ToolAlias != nil {
			tr.ToolName = *src.ToolAlias
		}
		if src.ToolInput != nil {
			c, err := jsonwire.CanonicalValue([]byte(*src.ToolInput))
			if err == nil {
				tr.ToolInput = c
			}
		}
	}
	tr.Status = final.Status
	tr.IsError = deref(final.IsError)
	tr.Output = deref(final.Output)
	tr.Error = failureOf(final.ErrorKey, final.ErrorDetail)
	var id int64
	if final.ResultDeliveredAt == nil {
		id = final.ID
	}
	return tr.Render(), id, nil
}

// seal writes the envelope around the entries: {"request":{"model","sealed_at","entries":[
// …],"request_options":{…}}}.
func (s *sealed) seal(ref string, sealedAt int64, opts model.RequestOptions) error {
	var pre strings.Builder
	pre.WriteString(`{"request":{"model":`)
	pre.Write(jsonwire.AppendString(nil, ref))
	pre.WriteString(`,"sealed_at":`)
	pre.Write(jsonwire.AppendString(nil, store.FormatMillis(sealedAt)))
	pre.WriteString(`,"entries":[`)
	s.parts.Prefix = []byte(pre.String())
	var err error
	s.parts.Suffix, err = optionsSuffix(opts)
	return err
}

// turnSegment is one earlier turn as history carries it: its own entries and its answer.
type turnSegment struct {
	entries []model.Entry
	bytes   [][]byte
	round   *store.Task // the turn's last sealed mainline round
}

// attachmentTokenAllowance is what an attachment part counts in the reported estimate: about
// one large image, which bytes ÷ 4 of its descriptor ignores.
const attachmentTokenAllowance = 1600

// reportedEstimate is the budget estimate that uses reported usage: when the previous mainline
// round of the conversation (the last history turn's last round) ran on the same model and its
// provider reported usage, the new request is that round's input and output tokens, plus the
// bytes ÷ 4 estimate of the entries written after its answer, plus an allowance per attachment
// part among them. ok is false when the rule does not apply (the estimate of bytes ÷ 4 then
// stands): bytes ÷ 4 undercounts many scripts and ignores images, and an undercount would come
// back as provider_context_overflow on every turn.
func reportedEstimate(hist []turnSegment, after []model.Entry, m model.Model) (int64, bool, error) {
	if len(hist) == 0 {
		return 0, false, nil
	}
	r := hist[len(hist)-1].round
	if r == nil || deref(r.Model) != m.Ref || r.Usage == nil {
		return 0, false, nil
	}
	u := r.Usage
	if u.Estimated || u.InputTokens <= 0 {
		return 0, false, nil
	}
	n, err := model.EstimateBytes(after, nil)
	if err != nil {
		return 0, false, err
	}
	est := u.InputTokens + u.OutputTokens + (n-2+3)/4 // the entries' bytes without the empty tools array
	for _, en := range after {
		for _, p := range en.Content {
			if p.Type == model.PartAttachment {
				est += attachmentTokenAllowance
			}
		}
	}
	return est, true, nil
}

// history is the earlier turns of a conversation-hosted run's conversation, oldest first
// (docs/development.md#how-the-kernel-runs-work): for each settled turn, the entries its mainline's last sealed round added
// after its own history, then its final answer as an assistant entry when it has one.
func (e *Engine) history(ctx context.Context, q store.Querier, run *store.Run, m model.Model, gate *uploads.Gate) ([]turnSegment, error) {
	me, err := store.TurnOfRun(ctx, q, run.ID)
	if err != nil {
		return nil, err
	}
	turns, err := store.TurnsOfConversation(ctx, q, *run.ConversationID, me.Position, 0)
	if err != nil {
		return nil, err
	}
	var out []turnSegment
	for _, turn := range turns {
		if turn.Status == TurnQueued || turn.Status == TurnRunning {
			continue
		}
		last, err := store.LastSealedRound(ctx, q, turn.RunID, "r1")
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		parts, err := store.SealedRequest(ctx, q, *last.SealedRequestID)
		if err != nil {
			return nil, err
		}
		seg := turnSegment{round: last}
		skip := int(deref(last.HistoryEntries))
		seg.bytes = append([][]byte(nil), parts.Entries[min(skip, len(parts.Entries)):]...)
		seg.entries = make([]model.Entry, len(seg.bytes))
		for i, b := range seg.bytes {
			if err := json.Unmarshal(b, &seg.entries[i]); err != nil {
				return nil, err
			}
		}
		// Attachments ride re-rendered for this round's model (docs/agent-tools.md#what-a-model-reads).
		changed, err := e.rerenderTurn(ctx, q, gate, &turn, seg.entries)
		if err != nil {
			return nil, err
		}
		for i := range seg.entries {
			// Provider blocks go back only to the model that produced them.
			if deref(last.Model) != m.Ref {
				if kept, dropped := withoutProviderBlocks(seg.entries[i]); dropped {
					seg.entries[i], changed[i] = kept, true
				}
			}
			if changed[i] {
				if seg.bytes[i], err = encodeEntry(seg.entries[i]); err != nil {
					return nil, err
				}
			}
		}
		// A refused final answer contributes no assistant entry: the provider requires the
		// refused turn removed before the conversation continues.
		if last.Status == StatusCompleted && last.AnswerCalls == nil && deref(last.Finish) != string(model.FinishRefused) {
			content, err := answerParts(last, m.Ref)
			if err != nil {
				return nil, err
			}
			en := model.Entry{Role: model.RoleAssistant, Content: content}
			b, err := encodeEntry(en)
			if err != nil {
				return nil, err
			}
			seg.entries = append(seg.entries, en)
			seg.bytes = append(seg.bytes, b)
		}
		out = append(out, seg)
	}
	return out, nil
}

// answerParts is the content of a round's assistant entry: its stored answer content (text and
// provider blocks, in the answer's order) when it has one, else its output as one text part.
// Provider blocks are kept only when the request goes to the model ref that produced them. Stored
// content that does not decode is an error.
func answerParts(round *store.Task, ref string) ([]model.Part, error) {
	if round.AnswerContent != nil {
		var parts []model.Part
		if err := json.Unmarshal([]byte(*round.AnswerContent), &parts); err != nil {
			return nil, fmt.Errorf("runs: the stored answer content of %s: %w", round.Key, err)
		}
		out := []model.Part{}
		for _, p := range parts {
			if p.Type == model.PartProviderBlock && deref(round.Model) != ref {
				continue
			}
			out = append(out, p)
		}
		return out, nil
	}
	if txt := deref(round.Output); txt != "" {
		return []model.Part{{Type: model.PartText, Text: txt}}, nil
	}
	return []model.Part{}, nil
}

// withoutProviderBlocks drops an assistant entry's provider blocks (history re-rendered for
// another model); dropped is false when it had none.
func withoutProviderBlocks(en model.Entry) (model.Entry, bool) {
	if en.Role != model.RoleAssistant {
		return en, false
	}
	kept := make([]model.Part, 0, len(en.Content))
	for _, p := range en.Content {
		if p.Type != model.PartProviderBlock {
			kept = append(kept, p)
		}
	}
	if len(kept) == len(en.Content) {
		return en, false
	}
	en.Content = kept
	return en, true
}
