package envelope

import (
	"strings"
	"unicode/utf8"
)

// The text a model reads of settled work (docs/agent-tools.md#what-a-model-reads): the escaping
// that protects the kernel's framing, the paired text of a call that could not run
// (<tool_use_error>), an ask's answer (<answer>) and the <task_result> envelope a result is
// delivered in. The engine decides what each carries; this file words it.

// framingWords are the tags whose opening the kernel protects inside model-visible text
// (docs/agent-tools.md#what-a-model-reads): a result that contains "<task_result" could otherwise
// forge a delivery the model would take for the kernel's.
var framingWords = []string{"/task_result", "task_result", "/answer", "answer", "/message", "message",
	"/tool_use_error", "tool_use_error"}

// Escape protects the kernel's framing: every "<" immediately followed by a framing word that
// is itself followed by a character other than a letter, digit or "_" (or by the end of the
// text) becomes "&lt;". Nothing else changes: "&", ">" and every other "<" stay.
func Escape(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		if s[i] == '<' && framed(s[i+1:]) {
			b.WriteString("&lt;")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func framed(rest string) bool {
	for _, w := range framingWords {
		if strings.HasPrefix(rest, w) {
			after := rest[len(w):]
			if after == "" {
				return true
			}
			c := after[0]
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
				continue
			}
			return true
		}
	}
	return false
}

// ToolUseError is the paired text of a call that could not run:
// <tool_use_error>SENTENCE (KEY) DETAIL</tool_use_error>, the detail and its space omitted when
// absent. The sentence is the one the error key's owner gives it.
func ToolUseError(sentence, key, detail string) string {
	text := sentence + " (" + key + ")"
	if detail != "" {
		text += " " + detail
	}
	return "<tool_use_error>" + Escape(text) + "</tool_use_error>"
}

// Answer is an ask call's paired result: <answer task="KEY">TEXT</answer>.
func Answer(awaitKey, text string) string {
	return `<answer task="` + awaitKey + `">` + Escape(text) + `</answer>`
}

// TaskResult is the input of a <task_result> envelope (docs/agent-tools.md#what-a-model-reads).
type TaskResult struct {
	// Key is the key the reader knows.
	Key string
	// Status is the task's status; a completed one (OutcomeCompleted) reads its output, any
	// other its error line.
	Status string
	// Conversation is a child conversation's public id, only for its replies.
	Conversation string
	IsError      bool
	// Head: exactly one of ModelPrompt (a model source; may be empty) or ToolName is used.
	ModelSource bool
	ModelPrompt string
	ToolName    string
	// ToolInput is the canonical JSON of tool_input; nil reads "null".
	ToolInput []byte
	Output    string
	// Error is the task's error; nil writes the error line's word alone.
	Error *Failure
	// ModelLine is a waited delegate_task's "[model: …]" line, "" when none.
	ModelLine string
}

// Failure is a task's error as a <task_result> names it: its key and detail.
type Failure struct {
	Key    string
	Detail string
}

// Render writes the envelope. Lines are joined by "\n" with no trailing newline.
func (r TaskResult) Render() string {
	completed := r.Status == string(OutcomeCompleted)
	var b strings.Builder
	b.WriteString(`<task_result task="` + r.Key + `" status="` + r.Status + `"`)
	if r.Conversation != "" {
		b.WriteString(` conversation="` + r.Conversation + `"`)
	}
	if completed && r.IsError {
		b.WriteString(` is_error="true"`)
	}
	b.WriteString(">\n")
	if r.ModelSource {
		b.WriteString("<prompt>" + Escape(excerptChars(r.ModelPrompt, PromptExcerptChars)) + "</prompt>")
	} else {
		in := "null"
		if r.ToolInput != nil {
			in = excerptBytes(string(r.ToolInput), CallInputExcerptBytes)
		}
		b.WriteString("<call>" + r.ToolName + " " + Escape(in) + "</call>")
	}
	b.WriteString("\n")
	if completed {
		if strings.TrimSpace(r.Output) == "" {
			b.WriteString("(task completed with no output)")
		} else {
			b.WriteString(Escape(r.Output))
		}
	} else {
		line := "error:"
		if r.Error != nil {
			line += " " + r.Error.Key
			if r.Error.Detail != "" {
				line += ": " + r.Error.Detail
			}
		}
		b.WriteString(Escape(line))
		if strings.TrimSpace(r.Output) != "" {
			b.WriteString("\n" + Escape(r.Output))
		}
	}
	if r.ModelLine != "" {
		b.WriteString("\n" + r.ModelLine)
	}
	b.WriteString("\n</task_result>")
	return b.String()
}

// excerptChars keeps the first n characters, followed by "…" when cut.
func excerptChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// excerptBytes keeps at most n bytes cut on a UTF-8 boundary, followed by "…" when cut.
func excerptBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return CutUTF8(s, n) + "…"
}

// CutUTF8 returns the longest prefix of s of at most n bytes that ends on a character boundary.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
