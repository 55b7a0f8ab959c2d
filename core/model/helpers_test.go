package model

import (
	"context"
	"testing"
	"time"
)

func text(s string) Part { return Part{Type: PartText, Text: s} }

func attachment(name string) Part {
	return Part{Type: PartAttachment, UploadPublicID: "6f1b2c3d-0000-4000-8000-00000000aa01", MediaType: "image/png",
		Name: name, ByteSize: 48213, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
}

func system(s string) Entry { return Entry{Role: RoleSystem, Content: []Part{text(s)}} }
func user(s string) Entry   { return Entry{Role: RoleUser, Content: []Part{text(s)}} }

func assistant(s string, calls ...ToolCall) Entry {
	e := Entry{Role: RoleAssistant, ToolCalls: calls}
	if s != "" {
		e.Content = []Part{text(s)}
	}
	return e
}

func toolResult(id, name, s string) Entry {
	e := Entry{Role: RoleTool, ToolCallID: id, Name: name}
	if s != "" {
		e.Content = []Part{text(s)}
	}
	return e
}

// delivery is a kernel <task_result> message.
func delivery(key, body string) Entry {
	return user("<task_result task=\"" + key + "\" status=\"completed\">\n<prompt></prompt>\n" + body + "\n</task_result>")
}

// instantMock is a mock whose sleep directive records the wait instead of waiting.
func instantMock(slept *time.Duration) *Mock {
	m := NewMock("mock")
	m.sleep = func(ctx context.Context, d time.Duration) error {
		if slept != nil {
			*slept += d
		}
		return ctx.Err()
	}
	return m
}

func complete(t *testing.T, entries ...Entry) *Response {
	t.Helper()
	resp, err := instantMock(nil).Complete(context.Background(), &Request{Ref: "mock/scripted", Model: "scripted", Entries: entries})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

// atRound builds a request whose script is in the first user entry and whose current round is n:
// n-1 earlier rounds, each an assistant entry with one call and its tool result.
func atRound(script string, n int) []Entry {
	entries := []Entry{user(script)}
	for i := 1; i < n; i++ {
		entries = append(entries, assistant("", ToolCall{ID: "c", Name: "t", Arguments: "{}"}), toolResult("c", "t", "result of round "+string(rune('0'+i))))
	}
	return entries
}

func completeWith(t *testing.T, entries []Entry, tools []ToolSchema) *Response {
	t.Helper()
	resp, err := instantMock(nil).Complete(context.Background(), &Request{Ref: "mock/scripted", Model: "scripted",
		Entries: entries, Tools: tools, ToolChoice: "auto", MaxOutputTokens: 8192})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}
