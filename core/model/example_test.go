package model

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPairingLawExample plays docs/mock.md#examples: the message text (testdata, with the
// 200-character id written out) makes round 1 answer five calls that the pairing law will treat
// five ways, and round 2 answer the last tool entry's text.
func TestPairingLawExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/pairing_law_example.txt")
	if err != nil {
		t.Fatal(err)
	}
	message := string(raw)
	longID := strings.Repeat("X", 200)
	wantCalls := []ToolCall{
		{ID: "mock_r1_0", Name: "read_file", Arguments: `{"path": "a.txt"}`},
		{ID: "mock_r1_1", Name: "read_file", Arguments: `{"path":`},
		{ID: "mock_r1_2", Name: "no_such_tool", Arguments: `{}`},
		{ID: "mock_r1_3", Name: "read_file", Arguments: `{"data":"` + strings.Repeat("x", 70000-11) + `"}`},
		{ID: longID, Name: "read_file", Arguments: `{"path": "b.txt"}`},
	}
	tools := []ToolSchema{{Name: "read_file", Description: "Read a file.",
		Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}}
	entries := []Entry{user(message)}

	r1 := completeWith(t, entries, tools)
	if diff := cmp.Diff(answer{Calls: wantCalls, Finish: FinishToolCalls}, answerOf(r1), ignoreEmpty); diff != "" {
		t.Fatalf("round 1 (-want +got)\n%s", diff)
	}
	if len(r1.ToolCalls[3].Arguments) != 70000 {
		t.Errorf("bigcall arguments are %d bytes", len(r1.ToolCalls[3].Arguments))
	}
	if len(r1.ToolCalls[4].ID) != 200 {
		t.Errorf("the long id is %d characters", len(r1.ToolCalls[4].ID))
	}

	// Round 2 reads five tool entries, three of them tool_use_error texts, paired with the
	// provider's original ids, and answers the last one's text.
	entries = append(entries, Entry{Role: RoleAssistant, ToolCalls: r1.ToolCalls},
		toolResult("mock_r1_0", "read_file", "contents of a"),
		Entry{Role: RoleTool, ToolCallID: "mock_r1_1", Name: "read_file", IsError: true, Content: []Part{text("<tool_use_error>The tool call could not run. (invalid_tool_arguments) unexpected end of JSON input</tool_use_error>")}},
		Entry{Role: RoleTool, ToolCallID: "mock_r1_2", Name: "no_such_tool", IsError: true, Content: []Part{text("<tool_use_error>The tool call could not run. (unknown_tool) no_such_tool is not one of this round's tools.</tool_use_error>")}},
		Entry{Role: RoleTool, ToolCallID: "mock_r1_3", Name: "read_file", IsError: true, Content: []Part{text("<tool_use_error>The tool call could not run. (tool_input_too_large) Arguments are 70000 bytes; the bound is 65536.</tool_use_error>")}},
		toolResult(longID, "read_file", "contents of b"),
	)
	r2 := completeWith(t, entries, tools)
	if diff := cmp.Diff(answer{Text: "contents of b", Finish: FinishStop}, answerOf(r2), ignoreEmpty); diff != "" {
		t.Errorf("round 2 (-want +got)\n%s", diff)
	}

	// With finish length instead, the calls are the same and the finish is length.
	r1 = completeWith(t, []Entry{user(strings.Replace(message, "finish tool_calls", "finish length", 1))}, tools)
	if diff := cmp.Diff(answer{Calls: wantCalls, Finish: FinishLength}, answerOf(r1), ignoreEmpty); diff != "" {
		t.Errorf("finish length (-want +got)\n%s", diff)
	}
}
