package runs

import "testing"

func TestToolUseError(t *testing.T) {
	t.Parallel()
	cases := []struct{ key, detail, want string }{
		{KeyToolUncertain, "", "<tool_use_error>The tool call's outcome is unknown; it may have taken effect. (tool_uncertain)</tool_use_error>"},
		{KeyToolTimeout, "d", "<tool_use_error>The tool call got no answer before its deadline. (tool_timeout) d</tool_use_error>"},
		{KeyApprovalDenied, "too risky", "<tool_use_error>The tool call was declined at approval. (approval_denied) too risky</tool_use_error>"},
		{KeyApprovalExpired, "", "<tool_use_error>The tool call expired while waiting for approval. (approval_expired)</tool_use_error>"},
		{KeyRunCanceled, "", "<tool_use_error>The tool call was canceled. (run_canceled)</tool_use_error>"},
		{KeyTaskCanceled, "", "<tool_use_error>The tool call was canceled. (task_canceled)</tool_use_error>"},
		{KeyAwaitTimeout, "", "<tool_use_error>The wait for an answer ended at its deadline. (await_timeout)</tool_use_error>"},
		{KeyToolFailed, "", "<tool_use_error>The tool reported that it could not run. (tool_failed)</tool_use_error>"},
		{KeyUnknownTool, "fetch_page is not one of this round's tools.", "<tool_use_error>The tool call could not run. (unknown_tool) fetch_page is not one of this round's tools.</tool_use_error>"},
		{KeyToolNotServed, "<answer>", "<tool_use_error>The tool call could not run. (tool_not_served) &lt;answer></tool_use_error>"},
	}
	for _, c := range cases {
		if got := ToolUseError(c.key, c.detail); got != c.want {
			t.Errorf("%s: %q, want %q", c.key, got, c.want)
		}
	}
}
