package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The JSON forms below are those a sealed request stores
// (docs/development.md#how-the-kernel-runs-work): keys in a fixed order, strings escaped minimally
// with no HTML escaping, so that the bytes a sealed request stores and the bytes the size estimate
// measures come from one encoder.

// MarshalJSON encodes the entry in the sealed request's entry grammar for its
// role.
func (e Entry) MarshalJSON() ([]byte, error) { return e.appendJSON(nil) }

func (e Entry) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"role":`...)
	b = jsonwire.AppendString(b, e.Role)
	switch e.Role {
	case RoleSystem, RoleUser:
		if b, err = appendContent(b, e.Content); err != nil {
			return nil, err
		}
	case RoleAssistant:
		if b, err = appendContent(b, e.Content); err != nil {
			return nil, err
		}
		if len(e.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for i, c := range e.ToolCalls {
				if i > 0 {
					b = append(b, ',')
				}
				b = c.appendJSON(b)
			}
			b = append(b, ']')
		}
	case RoleTool:
		b = append(b, `,"tool_call_id":`...)
		b = jsonwire.AppendString(b, e.ToolCallID)
		b = append(b, `,"name":`...)
		b = jsonwire.AppendString(b, e.Name)
		b = append(b, `,"is_error":`...)
		b = strconv.AppendBool(b, e.IsError)
		if b, err = appendContent(b, e.Content); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("model: entry role %q is not system, user, assistant or tool", e.Role)
	}
	return append(b, '}'), nil
}

func appendContent(b []byte, parts []Part) ([]byte, error) {
	b = append(b, `,"content":[`...)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = p.appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// MarshalJSON encodes the part as a text part or an attachment part.
func (p Part) MarshalJSON() ([]byte, error) { return p.appendJSON(nil) }

func (p Part) appendJSON(b []byte) ([]byte, error) {
	switch p.Type {
	case PartText:
		b = append(b, `{"type":"text","text":`...)
		b = jsonwire.AppendString(b, p.Text)
	case PartAttachment:
		b = append(b, `{"type":"attachment","upload_public_id":`...)
		b = jsonwire.AppendString(b, p.UploadPublicID)
		b = append(b, `,"media_type":`...)
		b = jsonwire.AppendString(b, p.MediaType)
		b = append(b, `,"name":`...)
		b = jsonwire.AppendString(b, p.Name)
		b = append(b, `,"byte_size":`...)
		b = strconv.AppendInt(b, p.ByteSize, 10)
		b = append(b, `,"sha256":`...)
		b = jsonwire.AppendString(b, p.SHA256)
		if p.SourceTask != "" {
			b = append(b, `,"source_task":`...)
			b = jsonwire.AppendString(b, p.SourceTask)
		}
	case PartProviderBlock:
		if !json.Valid(p.Block) {
			return nil, fmt.Errorf("model: a provider_block part holds no valid block")
		}
		b = append(b, `{"type":"provider_block","format":`...)
		b = jsonwire.AppendString(b, p.Format)
		b = append(b, `,"block":`...)
		var buf bytes.Buffer
		if err := json.Compact(&buf, p.Block); err != nil {
			return nil, err
		}
		b = append(b, buf.Bytes()...)
	default:
		return nil, fmt.Errorf("model: part type %q is not text, attachment or provider_block", p.Type)
	}
	return append(b, '}'), nil
}

// MarshalJSON encodes the call as {id, name, arguments}; arguments stays the raw string.
func (c ToolCall) MarshalJSON() ([]byte, error) { return c.appendJSON(nil), nil }

func (c ToolCall) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = jsonwire.AppendString(b, c.ID)
	b = append(b, `,"name":`...)
	b = jsonwire.AppendString(b, c.Name)
	b = append(b, `,"arguments":`...)
	b = jsonwire.AppendString(b, c.Arguments)
	return append(b, '}')
}

// MarshalJSON encodes the schema in the nested function form
// docs/development.md#how-the-kernel-runs-work shows. Description, parameters and strict are
// omitted when the schema has none; parameters keep their own key order (compacted, never
// re-sorted).
func (s ToolSchema) MarshalJSON() ([]byte, error) { return s.appendJSON(nil) }

func (s ToolSchema) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"type":"function","function":{"name":`...)
	b = jsonwire.AppendString(b, s.Name)
	if s.Description != "" {
		b = append(b, `,"description":`...)
		b = jsonwire.AppendString(b, s.Description)
	}
	if len(s.Parameters) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, s.Parameters); err != nil {
			return nil, fmt.Errorf("model: parameters of tool %q: %w", s.Name, err)
		}
		b = append(b, `,"parameters":`...)
		b = append(b, buf.Bytes()...)
	}
	if s.Strict != nil {
		b = append(b, `,"strict":`...)
		b = strconv.AppendBool(b, *s.Strict)
	}
	b = append(b, "}}"...)
	if s.DeferLoading {
		b = append(b[:len(b)-1], `,"defer_loading":true}`...)
	}
	return b, nil
}

// entryWire is the decoding shape of every role; which fields a role may carry is checked after.
type entryWire struct {
	Role       string      `json:"role"`
	Content    *[]Part     `json:"content"`
	ToolCalls  *[]ToolCall `json:"tool_calls"`
	ToolCallID *string     `json:"tool_call_id"`
	Name       *string     `json:"name"`
	IsError    *bool       `json:"is_error"`
}

// UnmarshalJSON reads the sealed request's entry grammar back, refusing
// fields that do not belong to the role.
func (e *Entry) UnmarshalJSON(data []byte) error {
	var w entryWire
	if err := strictDecode(data, &w); err != nil {
		return fmt.Errorf("model: entry: %w", err)
	}
	if w.Content == nil {
		return fmt.Errorf("model: %s entry without content", w.Role)
	}
	out := Entry{Role: w.Role, Content: *w.Content}
	toolOnly := w.ToolCallID != nil || w.Name != nil || w.IsError != nil
	switch w.Role {
	case RoleSystem, RoleUser:
		if toolOnly || w.ToolCalls != nil {
			return fmt.Errorf("model: %s entry with a field of another role", w.Role)
		}
	case RoleAssistant:
		if toolOnly {
			return fmt.Errorf("model: assistant entry with a field of a tool entry")
		}
		if w.ToolCalls != nil {
			out.ToolCalls = *w.ToolCalls
		}
	case RoleTool:
		if w.ToolCalls != nil || w.ToolCallID == nil || w.Name == nil || w.IsError == nil {
			return fmt.Errorf("model: tool entry needs tool_call_id, name and is_error and no tool_calls")
		}
		out.ToolCallID, out.Name, out.IsError = *w.ToolCallID, *w.Name, *w.IsError
	default:
		return fmt.Errorf("model: entry role %q is not system, user, assistant or tool", w.Role)
	}
	*e = out
	return nil
}

type partWire struct {
	Type           string          `json:"type"`
	Text           *string         `json:"text"`
	UploadPublicID *string         `json:"upload_public_id"`
	MediaType      *string         `json:"media_type"`
	Name           *string         `json:"name"`
	ByteSize       *int64          `json:"byte_size"`
	SHA256         *string         `json:"sha256"`
	SourceTask     *string         `json:"source_task"`
	Format         *string         `json:"format"`
	Block          json.RawMessage `json:"block"`
}

// UnmarshalJSON reads a text part or an attachment part.
func (p *Part) UnmarshalJSON(data []byte) error {
	var w partWire
	if err := strictDecode(data, &w); err != nil {
		return fmt.Errorf("model: part: %w", err)
	}
	attachment := w.UploadPublicID != nil || w.MediaType != nil || w.Name != nil || w.ByteSize != nil || w.SHA256 != nil || w.SourceTask != nil
	block := w.Format != nil || w.Block != nil
	if w.Type != PartProviderBlock && block {
		return fmt.Errorf("model: only a provider_block part holds format and block")
	}
	switch w.Type {
	case PartProviderBlock:
		if w.Text != nil || attachment || w.Format == nil || len(w.Block) == 0 {
			return fmt.Errorf("model: a provider_block part holds format and block and nothing else")
		}
		*p = Part{Type: PartProviderBlock, Format: *w.Format, Block: append(json.RawMessage(nil), w.Block...)}
	case PartText:
		if w.Text == nil || attachment {
			return fmt.Errorf("model: a text part holds text and nothing else")
		}
		*p = Part{Type: PartText, Text: *w.Text}
	case PartAttachment:
		if w.Text != nil || w.UploadPublicID == nil || w.MediaType == nil || w.Name == nil || w.ByteSize == nil || w.SHA256 == nil {
			return fmt.Errorf("model: an attachment part needs upload_public_id, media_type, name, byte_size and sha256")
		}
		*p = Part{Type: PartAttachment, UploadPublicID: *w.UploadPublicID, MediaType: *w.MediaType,
			Name: *w.Name, ByteSize: *w.ByteSize, SHA256: *w.SHA256}
		if w.SourceTask != nil {
			p.SourceTask = *w.SourceTask
		}
	default:
		return fmt.Errorf("model: part type %q is not text, attachment or provider_block", w.Type)
	}
	return nil
}

// UnmarshalJSON reads {id, name, arguments}.
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	var w struct {
		ID        *string `json:"id"`
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	}
	if err := strictDecode(data, &w); err != nil {
		return fmt.Errorf("model: tool call: %w", err)
	}
	if w.ID == nil || w.Name == nil || w.Arguments == nil {
		return fmt.Errorf("model: a tool call needs id, name and arguments")
	}
	*c = ToolCall{ID: *w.ID, Name: *w.Name, Arguments: *w.Arguments}
	return nil
}

type functionWire struct {
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// UnmarshalJSON reads a projected tool entry in either form a declaration takes
// (docs/agent-tools.md#declaring-tools): nested ({type, function: {…}}, an optional top-level
// strict the author wrote included) or flat ({type, name, description, parameters, strict}).
func (s *ToolSchema) UnmarshalJSON(data []byte) error {
	var w struct {
		Type         string        `json:"type"`
		Function     *functionWire `json:"function"`
		DeferLoading *bool         `json:"defer_loading"`
		functionWire
	}
	if err := strictDecode(data, &w); err != nil {
		return fmt.Errorf("model: tool schema: %w", err)
	}
	if w.Type != "function" {
		return fmt.Errorf("model: tool schema type %q is not function", w.Type)
	}
	f := w.functionWire
	if w.Function != nil {
		if w.Name != "" || w.Description != nil || w.Parameters != nil {
			return fmt.Errorf("model: a nested tool schema keeps name, description and parameters inside function")
		}
		f = *w.Function
		if f.Strict == nil {
			f.Strict = w.Strict
		}
	}
	if f.Name == "" {
		return fmt.Errorf("model: tool schema without a name")
	}
	out := ToolSchema{Name: f.Name, Strict: f.Strict, DeferLoading: w.DeferLoading != nil && *w.DeferLoading}
	if f.Description != nil {
		out.Description = *f.Description
	}
	if len(f.Parameters) > 0 {
		out.Parameters = append(json.RawMessage(nil), f.Parameters...)
	}
	*s = out
	return nil
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
