package projection

import (
	"fmt"
	"time"

	"github.com/nexuskernel/nexus/core/declare/jsonv"
)

// Role is the role of one sealed entry.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartType is the type of one content part.
type PartType string

const (
	PartText       PartType = "text"
	PartAttachment PartType = "attachment"
)

// Part is one content part: text, or an attachment referencing stored upload bytes.
type Part struct {
	Type PartType
	Text string
	// Attachment fields.
	UploadPublicID string
	MediaType      string
	Name           string
	ByteSize       int64
	SHA256         string
	// SourceTask is the task whose result bound the upload; "" when none.
	SourceTask string
}

// Text returns a text part.
func Text(s string) Part { return Part{Type: PartText, Text: s} }

// ToolCall is one call exactly as the model produced it: Arguments is the raw string.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Entry is one entry of a sealed request (docs/development.md#how-the-kernel-runs-work).
type Entry struct {
	Role    Role
	Content []Part
	// ToolCalls are an assistant entry's calls.
	ToolCalls []ToolCall
	// ToolCallID, Name and IsError belong to a tool entry: the provider's original call id,
	// the name as the model called it, and whether the result is an error.
	ToolCallID string
	Name       string
	IsError    bool
}

// Request is one sealed model round: what the provider was handed, recorded byte-exactly.
type Request struct {
	Model    string
	SealedAt time.Time
	Entries  []Entry
	// Tools is request_options.tools: exactly the projection offered, in order, possibly
	// empty.
	Tools []jsonv.Value
	// MaxOutputTokens is the models catalog's value for the model.
	MaxOutputTokens int64
}

// sealedAtLayout is RFC 3339 in UTC with milliseconds, the project's time format on the wire.
const sealedAtLayout = "2006-01-02T15:04:05.000Z"

// OpeningUserEntry is a lineage's opening user entry
// (docs/development.md#how-the-kernel-runs-work): the skills block part when there is one, then the
// text part, then one part per attachment.
func OpeningUserEntry(skillsBlock, text string, attachments ...Part) Entry {
	var parts []Part
	if skillsBlock != "" {
		parts = append(parts, Text(skillsBlock))
	}
	parts = append(parts, Text(text))
	return Entry{Role: RoleUser, Content: append(parts, attachments...)}
}

// Value is the entry as an ordered JSON value, keys in the sealed request's order.
func (e Entry) Value() jsonv.Value {
	ms := []jsonv.Member{jsonv.M("role", jsonv.String(string(e.Role)))}
	if e.Role == RoleTool {
		ms = append(ms,
			jsonv.M("tool_call_id", jsonv.String(e.ToolCallID)),
			jsonv.M("name", jsonv.String(e.Name)),
			jsonv.M("is_error", jsonv.Bool(e.IsError)))
	}
	parts := make([]jsonv.Value, len(e.Content))
	for i, p := range e.Content {
		parts[i] = p.value()
	}
	ms = append(ms, jsonv.M("content", jsonv.Array(parts...)))
	if e.Role == RoleAssistant && len(e.ToolCalls) > 0 {
		calls := make([]jsonv.Value, len(e.ToolCalls))
		for i, c := range e.ToolCalls {
			calls[i] = jsonv.Object(
				jsonv.M("id", jsonv.String(c.ID)),
				jsonv.M("name", jsonv.String(c.Name)),
				jsonv.M("arguments", jsonv.String(c.Arguments)))
		}
		ms = append(ms, jsonv.M("tool_calls", jsonv.Array(calls...)))
	}
	return jsonv.Object(ms...)
}

func (p Part) value() jsonv.Value {
	if p.Type != PartAttachment {
		return jsonv.Object(jsonv.M("type", jsonv.String(string(PartText))), jsonv.M("text", jsonv.String(p.Text)))
	}
	size, _ := jsonv.Number(fmt.Sprint(p.ByteSize))
	ms := []jsonv.Member{
		jsonv.M("type", jsonv.String(string(PartAttachment))),
		jsonv.M("upload_public_id", jsonv.String(p.UploadPublicID)),
		jsonv.M("media_type", jsonv.String(p.MediaType)),
		jsonv.M("name", jsonv.String(p.Name)),
		jsonv.M("byte_size", size),
		jsonv.M("sha256", jsonv.String(p.SHA256)),
	}
	if p.SourceTask != "" {
		ms = append(ms, jsonv.M("source_task", jsonv.String(p.SourceTask)))
	}
	return jsonv.Object(ms...)
}

// Split encodes the request as prefix, one encoding per entry, and suffix, such that the
// sealed bytes are prefix, the entries joined by commas, and suffix. A store can keep each
// entry once, addressed by its hash, and Join the identical bytes back.
func (r *Request) Split() (prefix []byte, entries [][]byte, suffix []byte) {
	prefix = append(prefix, `{"request":{"model":`...)
	prefix = jsonv.AppendString(prefix, r.Model)
	prefix = append(prefix, `,"sealed_at":`...)
	prefix = jsonv.AppendString(prefix, r.SealedAt.UTC().Format(sealedAtLayout))
	prefix = append(prefix, `,"entries":[`...)
	entries = make([][]byte, len(r.Entries))
	for i, e := range r.Entries {
		entries[i] = e.Value().Encode()
	}
	tools := r.Tools
	if tools == nil {
		tools = []jsonv.Value{}
	}
	opts := []jsonv.Member{jsonv.M("tools", jsonv.Array(tools...))}
	if len(tools) > 0 {
		opts = append(opts, jsonv.M("tool_choice", jsonv.String("auto")))
	}
	max, _ := jsonv.Number(fmt.Sprint(r.MaxOutputTokens))
	opts = append(opts, jsonv.M("max_output_tokens", max))
	suffix = append(suffix, `],"request_options":`...)
	suffix = jsonv.Object(opts...).Append(suffix)
	suffix = append(suffix, `}}`...)
	return prefix, entries, suffix
}

// Join reassembles sealed bytes from Split's parts.
func Join(prefix []byte, entries [][]byte, suffix []byte) []byte {
	n := len(prefix) + len(suffix) + len(entries)
	for _, e := range entries {
		n += len(e)
	}
	out := make([]byte, 0, n)
	out = append(out, prefix...)
	for i, e := range entries {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, suffix...)
}

// Encode is the sealed request's bytes: {"request":{"model","sealed_at","entries",
// "request_options":{"tools","tool_choice","max_output_tokens"}}}, tool_choice "auto" only
// when tools are offered.
func (r *Request) Encode() []byte { return Join(r.Split()) }
