package runs

import "github.com/nexuskernel/nexus/core/envelope"

// What a model reads of the engine's outcomes (docs/agent-tools.md#what-a-model-reads): the
// engine decides which envelope a result travels in and what it carries; core/envelope words it
// (envelope.Escape, envelope.TaskResult, envelope.Answer).

// toolUseErrorSentences maps an error key to its sentence (docs/agent-tools.md#what-a-model-reads).
var toolUseErrorSentences = map[string]string{
	KeyToolUncertain:   "The tool call's outcome is unknown; it may have taken effect.",
	KeyToolTimeout:     "The tool call got no answer before its deadline.",
	KeyApprovalDenied:  "The tool call was declined at approval.",
	KeyApprovalExpired: "The tool call expired while waiting for approval.",
	KeyRunCanceled:     "The tool call was canceled.",
	KeyTaskCanceled:    "The tool call was canceled.",
	KeyAwaitTimeout:    "The wait for an answer ended at its deadline.",
	KeyToolFailed:      "The tool reported that it could not run.",
}

// defaultToolUseErrorSentence is the sentence for every other key.
const defaultToolUseErrorSentence = "The tool call could not run."

// ToolUseError is the paired text of a call that could not run (envelope.ToolUseError), with
// the sentence its error key says.
func ToolUseError(key, detail string) string {
	s, ok := toolUseErrorSentences[key]
	if !ok {
		s = defaultToolUseErrorSentence
	}
	return envelope.ToolUseError(s, key, detail)
}

// failureOf is a row's stored error as a <task_result> names it; nil when it has none.
func failureOf(key, detail *string) *envelope.Failure {
	if key == nil {
		return nil
	}
	return &envelope.Failure{Key: *key, Detail: deref(detail)}
}
