package model

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Tool choices of request_options.
const (
	ToolChoiceAuto = "auto"
	// ToolChoiceNone goes with placeholder definitions only: calls in history, none offered.
	ToolChoiceNone = "none"
)

// placeholderDescription is the description of a placeholder definition.
const placeholderDescription = "Not available in this request."

// RequestOptions are a sealed request's request_options (docs/providers.md, what a provider
// receives): what was offered and how, recorded so that a replayed seal is a complete
// description of the call, whatever the catalog says later.
type RequestOptions struct {
	// Tools are the offered definitions as recorded, each the projection's encoding (or a
	// placeholder's).
	Tools           []json.RawMessage
	ToolChoice      string // "auto", "none" or "" (no tools)
	MaxOutputTokens int64
	Reasoning       *Reasoning
	ToolSearch      string // native deferral's variant, else ""
}

// RequestOptionsFor builds a round's request_options from what its set offers the model's
// provider (tools, in order, and native deferral's variant) and the entries it replays. A round
// that offers no tools but replays calls, sealed for a provider whose calls need definitions,
// records one placeholder definition per distinct replayed call name (in order of first
// appearance) with tool_choice "none".
func RequestOptionsFor(tools []json.RawMessage, toolSearch string, entries []Entry, m Model, caps ProviderCapabilities) RequestOptions {
	o := RequestOptions{Tools: tools, ToolSearch: toolSearch, Reasoning: m.ReasoningDefault}
	if m.MaxOutputTokens != nil {
		o.MaxOutputTokens = *m.MaxOutputTokens
	}
	if len(o.Tools) > 0 {
		o.ToolChoice = ToolChoiceAuto
		return o
	}
	if !caps.CallsNeedDefinitions {
		return o
	}
	seen := map[string]bool{}
	for _, e := range entries {
		for _, c := range e.ToolCalls {
			if seen[c.Name] {
				continue
			}
			seen[c.Name] = true
			b := []byte(`{"type":"function","function":{"name":`)
			b = jsonwire.AppendString(b, c.Name)
			b = append(b, `,"description":`...)
			b = jsonwire.AppendString(b, placeholderDescription)
			b = append(b, `,"parameters":{"type":"object","properties":{}},"strict":false}}`...)
			o.Tools = append(o.Tools, b)
		}
	}
	if len(o.Tools) > 0 {
		o.ToolChoice = ToolChoiceNone
	}
	return o
}

// MarshalJSON writes request_options with keys in their documented order: tools, tool_choice,
// max_output_tokens, reasoning (thinking, budget_tokens, effort, those set), tool_search.
func (o RequestOptions) MarshalJSON() ([]byte, error) {
	b := []byte(`{"tools":[`)
	for i, t := range o.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t...)
	}
	b = append(b, ']')
	if o.ToolChoice != "" {
		b = append(b, `,"tool_choice":`...)
		b = jsonwire.AppendString(b, o.ToolChoice)
	}
	b = append(b, `,"max_output_tokens":`...)
	b = strconv.AppendInt(b, o.MaxOutputTokens, 10)
	if r := o.Reasoning; r != nil {
		b = append(b, `,"reasoning":{`...)
		first := true
		key := func(k string) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = jsonwire.AppendString(b, k)
			b = append(b, ':')
		}
		if r.Thinking != "" {
			key("thinking")
			b = jsonwire.AppendString(b, r.Thinking)
		}
		if r.BudgetTokens != 0 {
			key("budget_tokens")
			b = strconv.AppendInt(b, int64(r.BudgetTokens), 10)
		}
		if r.Effort != "" {
			key("effort")
			b = jsonwire.AppendString(b, r.Effort)
		}
		b = append(b, '}')
	}
	if o.ToolSearch != "" {
		b = append(b, `,"tool_search":{"mode":"native","variant":`...)
		b = jsonwire.AppendString(b, o.ToolSearch)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads request_options back from a stored seal.
func (o *RequestOptions) UnmarshalJSON(data []byte) error {
	var w struct {
		Tools           []json.RawMessage `json:"tools"`
		ToolChoice      string            `json:"tool_choice"`
		MaxOutputTokens int64             `json:"max_output_tokens"`
		Reasoning       *struct {
			Thinking     string `json:"thinking"`
			BudgetTokens int    `json:"budget_tokens"`
			Effort       string `json:"effort"`
		} `json:"reasoning"`
		ToolSearch *struct {
			Variant string `json:"variant"`
		} `json:"tool_search"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("model: request_options: %w", err)
	}
	*o = RequestOptions{Tools: w.Tools, ToolChoice: w.ToolChoice, MaxOutputTokens: w.MaxOutputTokens}
	if r := w.Reasoning; r != nil {
		o.Reasoning = &Reasoning{Thinking: r.Thinking, BudgetTokens: r.BudgetTokens, Effort: r.Effort}
	}
	if w.ToolSearch != nil {
		o.ToolSearch = w.ToolSearch.Variant
	}
	return nil
}

// Schemas reads the recorded tools as the provider receives them.
func (o RequestOptions) Schemas() ([]ToolSchema, error) {
	out := make([]ToolSchema, 0, len(o.Tools))
	for _, raw := range o.Tools {
		var sc ToolSchema
		if err := json.Unmarshal(raw, &sc); err != nil {
			return nil, fmt.Errorf("model: offered tool: %w", err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// Apply completes a provider request from its request_options.
func (o RequestOptions) Apply(req *Request) error {
	tools, err := o.Schemas()
	if err != nil {
		return err
	}
	req.Tools, req.ToolChoice, req.MaxOutputTokens, req.Reasoning, req.ToolSearch = tools, o.ToolChoice, int(o.MaxOutputTokens), o.Reasoning, o.ToolSearch
	return nil
}
