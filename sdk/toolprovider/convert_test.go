package toolprovider

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/memory"
)

var convTime = time.Date(2030, 1, 15, 9, 0, 0, 123456000, time.UTC)

func TestCallRoundTrip(t *testing.T) {
	t.Parallel()
	ws := memory.Scope{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: "0193c2d4-5e6f-7a8b-9c0d-000000000002", Access: memory.AccessRead, WorkspaceID: "w"}
	for _, c := range []struct {
		name     string
		in, want Call
	}{
		{"full", Call{
			Tool: "example_echo", Input: json.RawMessage(`{"text":"hi"}`), Deadline: convTime,
			Scope: CallScope{WorkspaceID: "w", ConversationID: "c", RunID: "r", TaskKey: "r2t1", ToolCallID: "call_1", ToolAlias: "echo", MemoryBindings: []memory.Scope{ws}},
			Claim: ClaimInfo{ExecutorID: "e", ClaimedAt: convTime, Attempt: 2, Replay: true},
		}, Call{
			Tool: "example_echo", Input: json.RawMessage(`{"text":"hi"}`), Deadline: convTime,
			Scope: CallScope{WorkspaceID: "w", ConversationID: "c", RunID: "r", TaskKey: "r2t1", ToolCallID: "call_1", ToolAlias: "echo", MemoryBindings: []memory.Scope{ws}},
			Claim: ClaimInfo{ExecutorID: "e", ClaimedAt: convTime, Attempt: 2, Replay: true},
		}},
		{"first attempt is no replay", Call{Tool: "t", Claim: ClaimInfo{Attempt: 1, Replay: true}}, Call{Tool: "t", Claim: ClaimInfo{Attempt: 1}}},
		{"unknown scope words read empty", Call{Tool: "t", Scope: CallScope{MemoryBindings: []memory.Scope{{Binding: "x", Kind: "team", Access: "write"}}}},
			Call{Tool: "t", Scope: CallScope{MemoryBindings: []memory.Scope{{Binding: "x"}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, callFromProto(callToProto(c.in))); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestResultRoundTrip(t *testing.T) {
	t.Parallel()
	link := ResourceLink{URI: "capture:report", Name: "report.csv", MimeType: "text/csv", Size: 22, Title: "T", Description: "D"}
	for _, c := range []struct {
		name     string
		in, want Result
	}{
		{"text", Result{Text: "hi", Title: "echo (1×)", Structured: json.RawMessage(`{"a":1}`)}, Result{Text: "hi", Title: "echo (1×)", Structured: json.RawMessage(`{"a":1}`)}},
		{"blank result", Result{}, Result{}},
		{"structure only, null kept", Result{Structured: json.RawMessage(`null`)}, Result{Structured: json.RawMessage(`null`)}},
		{"false kept", Result{Structured: json.RawMessage(`false`)}, Result{Structured: json.RawMessage(`false`)}},
		{"blocks win over text", Result{Text: "ignored", Blocks: []Block{TextBlock("a"), LinkBlock(link)}, Captures: []Capture{{Ref: "report", Filename: "report.csv", Data: []byte("name,value\n")}}},
			Result{Blocks: []Block{TextBlock("a"), LinkBlock(link)}, Captures: []Capture{{Ref: "report", Filename: "report.csv", Data: []byte("name,value\n")}}}},
		{"empty block list stays a list", Result{Blocks: []Block{}}, Result{Blocks: []Block{}}},
		{"empty block travels empty", Result{Blocks: []Block{{}}}, Result{Blocks: []Block{{}}}},
		{"is_error and metadata", Result{Text: "bad", IsError: true, Metadata: json.RawMessage(`{"k":1}`)}, Result{Text: "bad", IsError: true, Metadata: json.RawMessage(`{"k":1}`)}},
		{"link optional fields absent", Result{Blocks: []Block{LinkBlock(ResourceLink{URI: "capture:a", Name: "a"})}}, Result{Blocks: []Block{LinkBlock(ResourceLink{URI: "capture:a", Name: "a"})}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := resultFromProto(resultToProto(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
	// Absent title and structured content are absent on the wire, not empty.
	p := resultToProto(Result{})
	if p.Title != nil || p.StructuredContentJson != nil || p.Content != nil {
		t.Errorf("blank result on the wire: %v", p)
	}
}

func TestFailedRoundTrip(t *testing.T) {
	t.Parallel()
	_, err := resultFromProto(failedToProto("example failure requested"))
	var f *FailedError
	if !errors.As(err, &f) || f.Detail != "example failure requested" {
		t.Fatalf("got %v", err)
	}
	if _, err := resultFromProto(&pb.CallResponse{Outcome: pb.Outcome_OUTCOME_UNSPECIFIED}); err != nil {
		t.Errorf("UNSPECIFIED reads as completed: %v", err)
	}
}
