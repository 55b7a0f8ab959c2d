package model

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchRequest is a conversation of n earlier rounds, each with ten memory calls and their
// results, under a script whose current round says the last result.
func benchRequest(n int) *Request {
	var script strings.Builder
	script.WriteString("!mock\n")
	for r := 1; r <= n+1; r++ {
		fmt.Fprintf(&script, "round %d\n", r)
		for i := range 10 {
			fmt.Fprintf(&script, "call memory_write {\"path\": \"/notes/%d-%d.md\", \"content\": \"round {{round}}\"}\n", r, i)
		}
	}
	entries := []Entry{system("You are a careful assistant."), user(script.String())}
	for r := 1; r <= n; r++ {
		var calls []ToolCall
		for i := range 10 {
			calls = append(calls, ToolCall{ID: fmt.Sprintf("mock_r%d_%d", r, i), Name: "memory_write",
				Arguments: fmt.Sprintf(`{"path": "/notes/%d-%d.md", "content": "round %d"}`, r, i, r)})
		}
		entries = append(entries, assistant("", calls...))
		for _, c := range calls {
			entries = append(entries, toolResult(c.ID, c.Name, "Wrote "+c.Arguments))
		}
	}
	tools := []ToolSchema{{Name: "memory_write", Description: strings.Repeat("Write a memory document. ", 40),
		Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)}}
	return &Request{Ref: "mock/scripted", Model: "scripted", Entries: entries, Tools: tools, ToolChoice: "auto", MaxOutputTokens: 8192}
}

// BenchmarkMockComplete measures one mock answer, script parse and size estimate included, for
// the third round of a ten-call run and for the 51st round of a long one.
func BenchmarkMockComplete(b *testing.B) {
	for _, n := range []int{2, 50} {
		req := benchRequest(n)
		b.Run(fmt.Sprintf("round_%d", n+1), func(b *testing.B) {
			m := NewMock("mock")
			for b.Loop() {
				resp, err := m.Complete(context.Background(), req)
				if err != nil || len(resp.ToolCalls) != 10 {
					b.Fatalf("%v %+v", err, resp)
				}
			}
		})
	}
}

// BenchmarkEstimate measures the size estimate
// (docs/development.md#how-the-kernel-runs-work) alone on the
// same requests.
func BenchmarkEstimate(b *testing.B) {
	for _, n := range []int{2, 50} {
		req := benchRequest(n)
		bytes, _ := EstimateBytes(req.Entries, req.Tools)
		b.Run(fmt.Sprintf("round_%d_%dB", n+1, bytes), func(b *testing.B) {
			b.SetBytes(bytes)
			for b.Loop() {
				if _, err := EstimateTokens(req.Entries, req.Tools); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
