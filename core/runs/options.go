package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/projection"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Tool choices of request_options.
const (
	toolChoiceAuto = "auto"
	// toolChoiceNone goes with placeholder definitions only: calls in history, none offered.
	toolChoiceNone = "none"
)

// placeholderDescription is the description of a placeholder definition.
const placeholderDescription = "Not available in this request."

// requestOptions is a sealed request's request_options: what was offered and how, recorded so
// that a replayed seal is a complete description of the call, whatever the catalog says later.
type requestOptions struct {
	Tools      []json.RawMessage
	ToolChoice string // "auto", "none" or "" (no tools)
	MaxOutput  int64
	Reasoning  *model.Reasoning
	ToolSearch string // native deferral's variant, else ""
}

// target is the projection target of a model: its provider's native search variant.
func target(m model.Model) projection.Target {
	return projection.Target{NativeSearch: m.NativeSearch}
}

// optionsFor builds a round's request_options from what the set offers the model's provider.
// A round that offers no tools but replays calls, sealed for an anthropic model, records one
// placeholder definition per distinct replayed call name (in order of first appearance) with
// tool_choice "none": that API refuses tool blocks in a request that defines no tools.
func optionsFor(offer projection.Offer, entries []model.Entry, m model.Model) requestOptions {
	o := requestOptions{Tools: offer.Tools, ToolSearch: offer.ToolSearch, Reasoning: m.ReasoningDefault}
	if m.MaxOutputTokens != nil {
		o.MaxOutput = *m.MaxOutputTokens
	}
	if len(o.Tools) > 0 {
		o.ToolChoice = toolChoiceAuto
		return o
	}
	if m.ProviderType != model.ProviderTypeAnthropic {
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
		o.ToolChoice = toolChoiceNone
	}
	return o
}

// encode writes request_options with keys in their documented order: tools, tool_choice,
// max_output_tokens, reasoning (thinking, budget_tokens, effort, those set), tool_search.
func (o requestOptions) encode() []byte {
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
	b = strconv.AppendInt(b, o.MaxOutput, 10)
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
	return append(b, '}')
}

// optionsSuffix is the sealed request's bytes after its entries.
const optionsPrefix = `],"request_options":`

// parseOptions reads request_options back from a stored seal's suffix.
func parseOptions(suffix []byte) (requestOptions, error) {
	body, ok := bytes.CutPrefix(suffix, []byte(optionsPrefix))
	if !ok || !bytes.HasSuffix(body, []byte("}}")) {
		return requestOptions{}, fmt.Errorf("runs: a sealed request's suffix is not request_options")
	}
	body = body[:len(body)-2]
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
	if err := json.Unmarshal(body, &w); err != nil {
		return requestOptions{}, fmt.Errorf("runs: request_options: %w", err)
	}
	o := requestOptions{Tools: w.Tools, ToolChoice: w.ToolChoice, MaxOutput: w.MaxOutputTokens}
	if r := w.Reasoning; r != nil {
		o.Reasoning = &model.Reasoning{Thinking: r.Thinking, BudgetTokens: r.BudgetTokens, Effort: r.Effort}
	}
	if w.ToolSearch != nil {
		o.ToolSearch = w.ToolSearch.Variant
	}
	return o, nil
}

// schemas reads the recorded tools as the provider receives them.
func (o requestOptions) schemas() ([]model.ToolSchema, error) {
	out := make([]model.ToolSchema, 0, len(o.Tools))
	for _, raw := range o.Tools {
		var sc model.ToolSchema
		if err := json.Unmarshal(raw, &sc); err != nil {
			return nil, fmt.Errorf("runs: offered tool: %w", err)
		}
		out = append(out, sc)
	}
	return out, nil
}
