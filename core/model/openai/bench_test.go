package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/modeltest"
)

// benchSealed is B13's sealed request: 200 offered tools and 100 history entries (assistant
// calls and their results).
func benchSealed() *model.Request {
	req := &model.Request{Ref: "p/m", Model: "gpt-5.1", ToolChoice: "auto", MaxOutputTokens: 8192}
	for i := range 200 {
		req.Tools = append(req.Tools, model.ToolSchema{Name: fmt.Sprintf("tool_%03d", i), Description: "Read a file of the workspace and answer its text.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`)})
	}
	req.Entries = []model.Entry{{Role: model.RoleSystem, Content: []model.Part{{Type: model.PartText, Text: "You are a careful assistant."}}},
		{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: "Read the notes."}}}}
	for r := 0; len(req.Entries) < 102; r++ {
		id := fmt.Sprintf("call_%d", r)
		req.Entries = append(req.Entries,
			model.Entry{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "tool_001", Arguments: fmt.Sprintf(`{"path":"notes/%d.md"}`, r)}}},
			model.Entry{Role: model.RoleTool, ToolCallID: id, Name: "tool_001", Content: []model.Part{{Type: model.PartText, Text: strings.Repeat("A line of the notes. ", 20)}}})
	}
	return req
}

// The wire struct json.Marshal encodes in B13's baseline: the same body, built beforehand.
type (
	wireFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireMessage struct {
		Role       string     `json:"role"`
		Content    *string    `json:"content"`
		ToolCalls  []wireCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	wireToolFunction struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	wireTool struct {
		Type     string           `json:"type"`
		Function wireToolFunction `json:"function"`
	}
	wireRequest struct {
		Model               string        `json:"model"`
		Messages            []wireMessage `json:"messages"`
		Tools               []wireTool    `json:"tools"`
		ToolChoice          string        `json:"tool_choice"`
		MaxCompletionTokens int           `json:"max_completion_tokens"`
		Stream              bool          `json:"stream"`
		StreamOptions       struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
)

func wireOf(req *model.Request) *wireRequest {
	w := &wireRequest{Model: req.Model, ToolChoice: "auto", MaxCompletionTokens: req.MaxOutputTokens, Stream: true}
	w.StreamOptions.IncludeUsage = true
	for _, e := range req.Entries {
		m := wireMessage{Role: e.Role, ToolCallID: e.ToolCallID}
		text := joinText(e.Content)
		if text != "" || len(e.ToolCalls) == 0 {
			m.Content = &text
		}
		for _, c := range e.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, wireCall{ID: c.ID, Type: "function", Function: wireFunction{c.Name, c.Arguments}})
		}
		w.Messages = append(w.Messages, m)
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireToolFunction{t.Name, t.Description, t.Parameters}})
	}
	return w
}

// noop answers at once: the retry decorator's own cost is what wrapping it adds.
type noop struct{ resp *model.Response }

func (n noop) Name() string { return "noop" }

func (n noop) Capabilities() model.ProviderCapabilities { return model.ProviderCapabilities{} }
func (n noop) Complete(context.Context, *model.Request) (*model.Response, error) {
	return n.resp, nil
}

func benchProvider(b *testing.B) *Provider {
	p, err := New(model.ProviderConfig{Name: "p", Type: model.ProviderTypeOpenAI, BaseURL: "http://127.0.0.1:1"}, []model.Model{{Ref: "p/m"}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkB13Encode is B13: a sealed request with 200 tools and 100 history entries to its
// request bytes, against json.Marshal of the same wire struct (goal: at most 1.5x), and the retry
// decorator's cost on a first-try success against that encode (goal: under 1%).
func BenchmarkB13Encode(b *testing.B) {
	p := benchProvider(b)
	req := benchSealed()
	w := wireOf(req)
	ctx := context.Background()
	body, err := p.Body(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	resp := &model.Response{Text: "ok"}
	bare := noop{resp}
	wrapped := model.WithRetry(bare, nil, nil)
	mean := modeltest.SideBySide(b, []string{"adapter", "json.Marshal", "retry-wrapped", "bare"},
		func() {
			if _, err := p.Body(ctx, req); err != nil {
				b.Fatal(err)
			}
		},
		func() {
			if _, err := json.Marshal(w); err != nil {
				b.Fatal(err)
			}
		},
		func() {
			for range 100 {
				_, _ = wrapped.Complete(ctx, req)
			}
		},
		func() {
			for range 100 {
				_, _ = bare.Complete(ctx, req)
			}
		})
	overhead := float64(mean[2]-mean[3]) / 100
	b.ReportMetric(overhead, "retry-overhead-ns/op")
	b.ReportMetric(100*overhead/float64(mean[0]), "retry-%-of-encode")
}

// b14Stream is B14's answer: 50 tool calls whose arguments are split across 5,000 chunks.
func b14Stream() []byte {
	var s bytes.Buffer
	const calls, chunks = 50, 5000
	per := chunks / calls
	for i := range calls {
		fmt.Fprintf(&s, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"call_%d\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n", i, i)
		for k := 1; k < per; k++ {
			fmt.Fprintf(&s, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":\"{\\\"p%d\\\":1,\"}}]},\"finish_reason\":null}]}\n\n", i, k)
		}
	}
	s.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
	return s.Bytes()
}

// BenchmarkB14Stream is B14: the SSE answer of 50 tool calls across 5,000 chunks folded into an
// answer, against bufio.Scanner and json.Unmarshal of the same events (goal: at most 2x); the
// bytes allocated per answer are reported beside the answer's size.
func BenchmarkB14Stream(b *testing.B) {
	body := b14Stream()
	log := hclog.NewNullLogger()
	b.SetBytes(int64(len(body)))
	b.ReportMetric(float64(len(body)), "answer-bytes")
	modeltest.SideBySide(b, []string{"fold", "scanner+unmarshal"},
		func() {
			m, _, err := readStream(bytes.NewReader(body), log, nil)
			if err != nil || len(m.calls) != 50 {
				b.Fatalf("%v", err)
			}
		},
		func() {
			if n := modeltest.ScanEvents(b, bytes.NewReader(body), func(data []byte) error {
				var c chunk
				return json.Unmarshal(data, &c)
			}); n != 5001 {
				b.Fatalf("%d events", n)
			}
		})
}

// BenchmarkB14StreamAlloc reports the fold's allocation per answer alone (memory bounded by
// the answer).
func BenchmarkB14StreamAlloc(b *testing.B) {
	body := b14Stream()
	log := hclog.NewNullLogger()
	b.ReportAllocs()
	b.ReportMetric(float64(len(body)), "answer-bytes")
	for b.Loop() {
		if _, _, err := readStream(bytes.NewReader(body), log, nil); err != nil {
			b.Fatal(err)
		}
	}
}
