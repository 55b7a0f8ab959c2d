package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// usageWire is the usage object of a message or of a message_delta.
type usageWire struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// merge replaces each recorded count by the one u carries (these counts are cumulative).
func (r *usageWire) merge(u *usageWire) {
	if u == nil {
		return
	}
	if u.InputTokens != nil {
		r.InputTokens = u.InputTokens
	}
	if u.OutputTokens != nil {
		r.OutputTokens = u.OutputTokens
	}
	if u.CacheCreationInputTokens != nil {
		r.CacheCreationInputTokens = u.CacheCreationInputTokens
	}
	if u.CacheReadInputTokens != nil {
		r.CacheReadInputTokens = u.CacheReadInputTokens
	}
}

func (r *usageWire) usage() *model.Usage {
	if r == nil || (r.InputTokens == nil && r.OutputTokens == nil) {
		return nil
	}
	n := func(v *int64) int64 {
		if v == nil {
			return 0
		}
		return *v
	}
	return &model.Usage{InputTokens: n(r.InputTokens) + n(r.CacheCreationInputTokens) + n(r.CacheReadInputTokens),
		OutputTokens: n(r.OutputTokens), CachedInputTokens: n(r.CacheReadInputTokens), CacheWriteInputTokens: n(r.CacheCreationInputTokens)}
}

// answer is an answer as both paths accumulate it.
type answer struct {
	content []model.Part
	calls   []model.ToolCall
	stop    string
	usage   *usageWire
}

type messageWire struct {
	ID         string            `json:"id"`
	Content    []json.RawMessage `json:"content"`
	StopReason *string           `json:"stop_reason"`
	Usage      *usageWire        `json:"usage"`
}

// decodeMessage reads a non-streamed answer.
func decodeMessage(body []byte, log hclog.Logger) (*answer, error) {
	var m messageWire
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, wire.Unreadable("the body is not a message")
	}
	a := &answer{usage: m.Usage}
	if m.StopReason != nil {
		a.stop = *m.StopReason
	}
	for _, raw := range m.Content {
		var head struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, wire.Unreadable("a content block is not an object")
		}
		switch {
		case head.Type == "text":
			a.content = append(a.content, model.Part{Type: model.PartText, Text: head.Text})
		case head.Type == "tool_use":
			a.calls = append(a.calls, model.ToolCall{ID: head.ID, Name: head.Name, Arguments: wire.CompactOrVerbatim(head.Input)})
		case providerBlockTypes[head.Type]:
			var buf bytes.Buffer
			_ = json.Compact(&buf, raw)
			a.content = append(a.content, model.Part{Type: model.PartProviderBlock, Format: model.ProviderTypeAnthropic, Block: buf.Bytes()})
		default:
			log.Info("dropped a content block of an unknown type", "type", head.Type)
		}
	}
	return a, nil
}

// pausedTurn is the detail of a paused turn, which this adapter does not resume.
const pausedTurn = "the provider paused the turn; paused turns are not resumed"

// response turns an accumulated answer into the kernel's Response (docs/providers.md, stop
// reasons and usage).
func (a *answer) response(req *model.Request, log hclog.Logger) (*model.Response, error) {
	r := &model.Response{ToolCalls: a.calls, Content: a.content}
	var texts []string
	for _, p := range a.content {
		if p.Type == model.PartText {
			texts = append(texts, p.Text)
		}
	}
	r.Text = strings.Join(texts, "\n\n")
	calls := len(a.calls) > 0
	switch a.stop {
	case "end_turn":
		r.Finish = pick(calls)
	case "tool_use":
		r.Finish = model.FinishToolCalls
		if !calls {
			log.Info("the provider said tool_use without a call")
			r.Finish = model.FinishStop
		}
	case "max_tokens", "model_context_window_exceeded":
		r.Finish = model.FinishLength
	case "stop_sequence":
		r.Finish = model.FinishStop
	case "refusal":
		r.Finish = model.FinishRefused
		r.ToolCalls = nil
	case "pause_turn":
		return nil, &model.Error{Key: model.KeyProviderError, Detail: pausedTurn}
	default:
		if a.stop != "" {
			log.Info("unknown stop_reason", "stop_reason", a.stop)
		}
		r.Finish = pick(calls)
	}
	if u := a.usage.usage(); u != nil {
		r.Usage = *u
	} else {
		u, err := model.EstimateUsage(req, r)
		if err != nil {
			return nil, &model.Error{Key: model.KeyProviderError, Detail: "usage: the request could not be estimated"}
		}
		u.Estimated = true
		r.Usage = u
	}
	if r.Content == nil {
		r.Content = []model.Part{}
	}
	return r, nil
}

func pick(calls bool) model.Finish {
	if calls {
		return model.FinishToolCalls
	}
	return model.FinishStop
}
