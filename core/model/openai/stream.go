package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// chunk is one streamed event's JSON.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageWire      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamCall is a call as its deltas accumulate.
type streamCall struct {
	index int
	id    string
	name  string
	args  []byte
}

// fold accumulates a stream of chunks into one answer.
type fold struct {
	text, refusal []byte
	calls         []*streamCall
	byIndex       map[int]*streamCall
	finish        string
	sawFinish     bool
	usage         *usageWire
	log           hclog.Logger
	// emit hears the text and each call's name as they arrive; nil when nobody listens.
	emit func(model.Delta)
}

// errStreamError is a chunk whose top-level key is error; its body is in midError.
type midStreamError struct{ body []byte }

func (e *midStreamError) Error() string { return "error chunk" }

func newFold(log hclog.Logger, emit func(model.Delta)) *fold {
	return &fold{byIndex: map[int]*streamCall{}, log: log, emit: emit}
}

// add folds one chunk's data.
func (f *fold) add(data []byte) error {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return wire.Unreadable("a stream chunk is not JSON")
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return &midStreamError{body: append([]byte(nil), data...)}
	}
	if c.Usage != nil {
		f.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if d.Content != nil {
			f.text = append(f.text, *d.Content...)
			if f.emit != nil && *d.Content != "" {
				f.emit(model.Delta{Text: *d.Content})
			}
		}
		if d.Refusal != nil {
			f.refusal = append(f.refusal, *d.Refusal...)
		}
		for _, tc := range d.ToolCalls {
			call := f.callFor(tc.Index, tc.ID)
			if call.id == "" && tc.ID != "" {
				call.id = tc.ID
			}
			if tc.Function.Name != "" {
				if call.name == "" {
					call.name = tc.Function.Name
					if f.emit != nil {
						f.emit(model.Delta{ToolCall: call.name})
					}
				} else if call.name != tc.Function.Name {
					f.log.Info("a later chunk named a call differently; the first name is kept")
				}
			}
			call.args = append(call.args, argumentsText(tc.Function.Arguments)...)
		}
		if ch.FinishReason != nil {
			f.finish = *ch.FinishReason
			f.sawFinish = true
		}
	}
	return nil
}

// callFor finds the call a delta continues: by index; without one, the most recent call unless
// the delta carries an id not yet seen, which starts a new call.
func (f *fold) callFor(index *int, id string) *streamCall {
	if index != nil {
		if c, ok := f.byIndex[*index]; ok {
			return c
		}
		c := &streamCall{index: *index}
		f.byIndex[*index] = c
		f.calls = append(f.calls, c)
		return c
	}
	if n := len(f.calls); n > 0 {
		last := f.calls[n-1]
		if id == "" || id == last.id {
			return last
		}
		for _, c := range f.calls {
			if c.id == id {
				return c
			}
		}
	}
	c := &streamCall{index: -1}
	f.calls = append(f.calls, c)
	return c
}

// message is the folded answer, calls ordered by index (by first appearance without indexes).
func (f *fold) message() *message {
	m := &message{text: string(f.text), refusal: string(f.refusal), finish: f.finish, usage: f.usage.usage()}
	ordered := append([]*streamCall(nil), f.calls...)
	// A stable insertion sort keeps first-appearance order among equal (or absent) indexes.
	for i := 1; i < len(ordered); i++ {
		for j := i; j > 0 && ordered[j].index >= 0 && ordered[j-1].index > ordered[j].index; j-- {
			ordered[j], ordered[j-1] = ordered[j-1], ordered[j]
		}
	}
	for _, c := range ordered {
		m.calls = append(m.calls, modelCall(c))
	}
	return m
}

// readStream folds a streamed body. It ends at data: [DONE], or at the end of the body when a
// finish_reason was seen; anything else is a broken stream.
func readStream(body io.Reader, log hclog.Logger, emit func(model.Delta)) (*message, int64, error) {
	r := wire.NewSSEReader(body)
	f := newFold(log, emit)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			if f.sawFinish {
				return f.message(), r.Read(), nil
			}
			return nil, r.Read(), wire.BrokenStream("[DONE]", r.Read())
		}
		if err != nil {
			return nil, r.Read(), err
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if string(data) == "[DONE]" {
			return f.message(), r.Read(), nil
		}
		if err := f.add(data); err != nil {
			if ev.Cut {
				return nil, r.Read(), io.ErrUnexpectedEOF // cut inside a chunk: a broken stream
			}
			return nil, r.Read(), err
		}
	}
}
