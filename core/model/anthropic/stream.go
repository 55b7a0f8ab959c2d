package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

type eventWire struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string     `json:"id"`
		Usage *usageWire `json:"usage"`
	} `json:"message"`
	Index        int             `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		PartialJSON string  `json:"partial_json"`
		Thinking    string  `json:"thinking"`
		Signature   string  `json:"signature"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usageWire      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// openBlock is a content block as its deltas accumulate.
type openBlock struct {
	start     []byte
	typ       string
	id, name  string
	text      []byte
	input     []byte
	thinking  []byte
	signature []byte
}

// midStreamError is an error event; its data is kept for classification.
type midStreamError struct{ data []byte }

func (e *midStreamError) Error() string { return "error event" }

// fold accumulates a stream's events into one answer.
type fold struct {
	blocks  map[int]*openBlock
	order   []int
	stop    string
	usage   usageWire
	started bool
	stopped bool
	log     hclog.Logger
	// emit hears the text and each tool call's name as they arrive; nil when nobody listens.
	emit func(model.Delta)
}

func newFold(log hclog.Logger, emit func(model.Delta)) *fold {
	return &fold{blocks: map[int]*openBlock{}, log: log, emit: emit}
}

func (f *fold) add(name string, data []byte) error {
	var ev eventWire
	if err := json.Unmarshal(data, &ev); err != nil {
		return wire.Unreadable("a stream event is not JSON")
	}
	typ := ev.Type
	if typ == "" {
		typ = name
	}
	switch typ {
	case "message_start":
		f.started = true
		if ev.Message != nil {
			f.usage.merge(ev.Message.Usage)
		}
	case "content_block_start":
		var head struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Name string `json:"name"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(ev.ContentBlock, &head); err != nil {
			return wire.Unreadable("a content block is not an object")
		}
		if _, ok := f.blocks[ev.Index]; !ok {
			f.order = append(f.order, ev.Index)
		}
		f.blocks[ev.Index] = &openBlock{start: append([]byte(nil), ev.ContentBlock...), typ: head.Type, id: head.ID, name: head.Name, text: []byte(head.Text)}
		if f.emit != nil {
			switch {
			case head.Type == "tool_use":
				f.emit(model.Delta{ToolCall: head.Name})
			case head.Type == "text" && head.Text != "":
				f.emit(model.Delta{Text: head.Text})
			}
		}
	case "content_block_delta":
		b := f.blocks[ev.Index]
		if b == nil || ev.Delta == nil {
			return wire.Unreadable("a delta for a block that was never started")
		}
		switch ev.Delta.Type {
		case "text_delta":
			b.text = append(b.text, ev.Delta.Text...)
			if f.emit != nil && b.typ == "text" && ev.Delta.Text != "" {
				f.emit(model.Delta{Text: ev.Delta.Text})
			}
		case "input_json_delta":
			b.input = append(b.input, ev.Delta.PartialJSON...)
		case "thinking_delta":
			b.thinking = append(b.thinking, ev.Delta.Thinking...)
		case "signature_delta":
			b.signature = append(b.signature, ev.Delta.Signature...)
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != nil {
			f.stop = *ev.Delta.StopReason
		}
		f.usage.merge(ev.Usage)
	case "message_stop":
		f.stopped = true
	case "error":
		return &midStreamError{data: append([]byte(nil), data...)}
	}
	return nil
}

// answer is the folded stream: blocks in index order.
func (f *fold) answer() (*answer, error) {
	a := &answer{stop: f.stop, usage: &f.usage}
	for _, i := range f.order {
		b := f.blocks[i]
		switch {
		case b.typ == "text":
			a.content = append(a.content, model.Part{Type: model.PartText, Text: string(b.text)})
		case b.typ == "tool_use":
			a.calls = append(a.calls, model.ToolCall{ID: b.id, Name: b.name, Arguments: wire.CompactOrVerbatim(b.input)})
		case providerBlockTypes[b.typ]:
			set := map[string][]byte{}
			switch b.typ {
			case "thinking":
				set["thinking"] = jsonString(string(b.thinking))
				set["signature"] = jsonString(string(b.signature))
			case "server_tool_use":
				if len(bytes.TrimSpace(b.input)) > 0 {
					in := wire.CompactOrVerbatim(b.input)
					if !json.Valid([]byte(in)) {
						return nil, wire.Unreadable("a server tool input is not JSON")
					}
					set["input"] = []byte(in)
				}
			}
			block, err := withValues(b.start, set)
			if err != nil {
				return nil, wire.Unreadable("a provider block is not an object")
			}
			a.content = append(a.content, model.Part{Type: model.PartProviderBlock, Format: model.ProviderTypeAnthropic, Block: block})
		default:
			f.log.Info("dropped a content block of an unknown type", "type", b.typ)
		}
	}
	return a, nil
}

// readStream folds a streamed body; it is complete at message_stop, and a body that ends
// before it is a broken stream.
func readStream(body io.Reader, log hclog.Logger, emit func(model.Delta)) (*answer, int64, error) {
	r := wire.NewSSEReader(body)
	f := newFold(log, emit)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil, r.Read(), wire.BrokenStream("message_stop", r.Read())
		}
		if err != nil {
			return nil, r.Read(), err
		}
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue
		}
		if err := f.add(ev.Name, ev.Data); err != nil {
			if ev.Cut {
				return nil, r.Read(), io.ErrUnexpectedEOF // cut inside an event: a broken stream
			}
			return nil, r.Read(), err
		}
		if f.stopped {
			a, err := f.answer()
			return a, r.Read(), err
		}
	}
}
