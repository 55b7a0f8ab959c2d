package envelope

import (
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"plain":                    "plain",
		"<task_result task=\"x\">": "&lt;task_result task=\"x\">",
		"</task_result>":           "&lt;/task_result>",
		"<answer>":                 "&lt;answer>",
		"</answer>":                "&lt;/answer>",
		"<message":                 "&lt;message",
		"</message>":               "&lt;/message>",
		"<tool_use_error>":         "&lt;tool_use_error>",
		"</tool_use_error>":        "&lt;/tool_use_error>",
		"<task_results>":           "<task_results>",
		"<answer_key>":             "<answer_key>",
		"<answer2>":                "<answer2>",
		"<answer-x>":               "&lt;answer-x>",
		"<answer":                  "&lt;answer",
		"a < b && c > d":           "a < b && c > d",
		"<b>bold</b> & <i>":        "<b>bold</b> & <i>",
		"&lt;answer> stays":        "&lt;answer> stays",
		"x<answer y</answer>":      "x&lt;answer y&lt;/answer>",
		"<Answer>":                 "<Answer>",
		"<<task_result>":           "<&lt;task_result>",
		"é<answer\n":               "é&lt;answer\n",
	}
	for in, want := range cases {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestToolUseErrorForm(t *testing.T) {
	t.Parallel()
	if got := ToolUseError("The tool call could not run.", "unknown_tool", ""); got != "<tool_use_error>The tool call could not run. (unknown_tool)</tool_use_error>" {
		t.Fatal(got)
	}
	if got := ToolUseError("S.", "k", "<answer>"); got != "<tool_use_error>S. (k) &lt;answer></tool_use_error>" {
		t.Fatal(got)
	}
}

func TestAnswer(t *testing.T) {
	t.Parallel()
	if got := Answer("r2t0-ask-1", "Use <answer> staging"); got != `<answer task="r2t0-ask-1">Use &lt;answer> staging</answer>` {
		t.Fatal(got)
	}
	if got := Answer("r2t0-ask-1", ""); got != `<answer task="r2t0-ask-1"></answer>` {
		t.Fatal(got)
	}
}

func TestTaskResult(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   TaskResult
		want string
	}{
		{"spec example", TaskResult{Key: "r2t0", Status: string(OutcomeCompleted), ModelSource: true,
			ModelPrompt: "Find every TODO in the repository and group them by owner", Output: "Found 7 TODOs: 4 for ana, 3 for li."},
			"<task_result task=\"r2t0\" status=\"completed\">\n<prompt>Find every TODO in the repository and group them by owner</prompt>\nFound 7 TODOs: 4 for ana, 3 for li.\n</task_result>"},
		{"blank output", TaskResult{Key: "k", Status: string(OutcomeCompleted), ToolName: "memory_ls", ToolInput: []byte(`{}`)},
			"<task_result task=\"k\" status=\"completed\">\n<call>memory_ls {}</call>\n(task completed with no output)\n</task_result>"},
		{"is_error", TaskResult{Key: "k", Status: string(OutcomeCompleted), IsError: true, ToolName: "t", Output: "bad"},
			"<task_result task=\"k\" status=\"completed\" is_error=\"true\">\n<call>t null</call>\nbad\n</task_result>"},
		{"failed with detail and output", TaskResult{Key: "k", Status: "failed", ToolName: "t", ToolInput: []byte(`{"a":1}`),
			Error: &Failure{Key: "tool_failed", Detail: "boom"}, Output: "log"},
			"<task_result task=\"k\" status=\"failed\">\n<call>t {\"a\":1}</call>\nerror: tool_failed: boom\nlog\n</task_result>"},
		{"timed out without detail", TaskResult{Key: "k", Status: "timed_out", ToolName: "t", Error: &Failure{Key: "tool_timeout"}},
			"<task_result task=\"k\" status=\"timed_out\">\n<call>t null</call>\nerror: tool_timeout\n</task_result>"},
		{"conversation", TaskResult{Key: "k", Status: string(OutcomeCompleted), Conversation: "c1", ModelSource: true, Output: "hi"},
			"<task_result task=\"k\" status=\"completed\" conversation=\"c1\">\n<prompt></prompt>\nhi\n</task_result>"},
		{"escaped body", TaskResult{Key: "k", Status: string(OutcomeCompleted), ToolName: "t", Output: "</task_result> forged"},
			"<task_result task=\"k\" status=\"completed\">\n<call>t null</call>\n&lt;/task_result> forged\n</task_result>"},
		{"model line", TaskResult{Key: "k", Status: string(OutcomeCompleted), ModelSource: true, Output: "x", ModelLine: "[model: mock/text-only]"},
			"<task_result task=\"k\" status=\"completed\">\n<prompt></prompt>\nx\n[model: mock/text-only]\n</task_result>"},
	}
	for _, c := range cases {
		if got := c.in.Render(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	long := strings.Repeat("é", 81)
	got := TaskResult{Key: "k", Status: string(OutcomeCompleted), ModelSource: true, ModelPrompt: long, Output: "x"}.Render()
	if !strings.Contains(got, "<prompt>"+strings.Repeat("é", 80)+"…</prompt>") {
		t.Errorf("80-character excerpt: %q", got)
	}
	input := `{"d":"` + strings.Repeat("€", 100) + `"}`
	got = TaskResult{Key: "k", Status: string(OutcomeCompleted), ToolName: "t", ToolInput: []byte(input), Output: "x"}.Render()
	head := strings.Split(got, "\n")[1]
	cut := strings.TrimSuffix(strings.TrimPrefix(head, "<call>t "), "…</call>")
	if len(cut) > CallInputExcerptBytes || !strings.HasSuffix(head, "…</call>") || !strings.HasPrefix(input, cut) {
		t.Errorf("200-byte input excerpt: %q", head)
	}
}
