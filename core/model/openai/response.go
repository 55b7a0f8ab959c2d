package openai

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// usageWire is the usage object of a completion or of a stream's last chunk.
type usageWire struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *usageWire) usage() *model.Usage {
	if u == nil {
		return nil
	}
	out := &model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CachedInputTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// callWire is a tool call of a message; arguments may be a string or, from a non-conforming
// server, a JSON object or array.
type callWire struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type completion struct {
	ID      string `json:"id"`
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []callWire      `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageWire `json:"usage"`
}

// message is an answer as both paths accumulate it, before it becomes a Response.
type message struct {
	text, refusal string
	calls         []model.ToolCall
	finish        string
	usage         *model.Usage
}

// decodeCompletion reads a non-streamed answer.
func decodeCompletion(body []byte, log hclog.Logger) (*message, error) {
	var c completion
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, wire.Unreadable("the body is not a chat completion")
	}
	if len(c.Choices) == 0 {
		return nil, wire.Unreadable("the response has no choices")
	}
	ch := c.Choices[0]
	m := &message{text: contentText(ch.Message.Content), usage: c.Usage.usage()}
	if ch.Message.Refusal != nil {
		m.refusal = *ch.Message.Refusal
	}
	if ch.FinishReason != nil {
		m.finish = *ch.FinishReason
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			log.Warn("dropped a tool call that is not a function", "type", tc.Type)
			continue
		}
		m.calls = append(m.calls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: argumentsText(tc.Function.Arguments)})
	}
	return m, nil
}

// contentText reads message.content: null as "", a string as itself, an array of parts as its
// text parts joined with a blank line.
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// argumentsText is a call's arguments string: a JSON string as its value, an object or array
// as its compact encoding.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// response turns an accumulated answer into the kernel's Response (docs/providers.md, finish
// reasons and usage); usage missing is estimated from the request.
func (m *message) response(req *model.Request, log hclog.Logger) (*model.Response, error) {
	r := &model.Response{Text: m.text, ToolCalls: m.calls}
	switch m.finish {
	case "stop":
		r.Finish = model.FinishStop
		if len(m.calls) > 0 {
			r.Finish = model.FinishToolCalls
		}
	case "tool_calls", "function_call":
		r.Finish = model.FinishToolCalls
		if len(m.calls) == 0 {
			log.Info("the provider said tool_calls without a call", "finish_reason", m.finish)
			r.Finish = model.FinishStop
		}
	case "length":
		r.Finish = model.FinishLength
	case "content_filter":
		r.Finish = model.FinishRefused
	default:
		if m.finish != "" {
			log.Info("unknown finish_reason", "finish_reason", m.finish)
		}
		r.Finish = model.FinishStop
		if len(m.calls) > 0 {
			r.Finish = model.FinishToolCalls
		}
	}
	if m.refusal != "" {
		r.Finish = model.FinishRefused
		if r.Text == "" {
			r.Text = m.refusal
		}
	}
	if r.Finish == model.FinishRefused {
		r.ToolCalls = nil
	}
	if r.Text != "" {
		r.Content = []model.Part{{Type: model.PartText, Text: r.Text}}
	}
	if m.usage != nil {
		r.Usage = *m.usage
	} else {
		u, err := model.EstimateUsage(req, r)
		if err != nil {
			return nil, &model.Error{Key: model.KeyProviderError, Detail: "usage: the request could not be estimated"}
		}
		u.Estimated = true
		r.Usage = u
	}
	return r, nil
}

func modelCall(c *streamCall) model.ToolCall {
	return model.ToolCall{ID: c.id, Name: c.name, Arguments: string(c.args)}
}
