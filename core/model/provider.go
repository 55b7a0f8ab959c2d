package model

import (
	"context"
	"encoding/json"
	"io"
)

// Provider sends one sealed request to a model and returns its answer.
// Implementations must be safe for concurrent use.
type Provider interface {
	// Name is the provider key used in model refs ("mock" in "mock/scripted").
	Name() string
	// Complete performs one model call. It must honour ctx cancellation.
	// A returned *Error settles the model task failed with Error.Key.
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// Request is a sealed request as a provider receives it
// (docs/development.md#how-the-kernel-runs-work).
type Request struct {
	Ref             string       // "mock/scripted"
	Model           string       // "scripted": the model id inside the provider
	Entries         []Entry      // docs/development.md#how-the-kernel-runs-work, in order
	Tools           []ToolSchema // request_options.tools as offered
	ToolChoice      string       // "auto" or "" (no tools)
	MaxOutputTokens int
	Media           MediaReader // opens attachment bytes by upload public id
}

// Entry is one message of a sealed request. Its JSON form (MarshalJSON) is the entry grammar of
// docs/development.md#how-the-kernel-runs-work.
type Entry struct {
	Role       string     // "system" | "user" | "assistant" | "tool"
	Content    []Part     // text parts; user entries also attachment parts
	ToolCalls  []ToolCall // assistant only
	ToolCallID string     // tool only
	Name       string     // tool only
	IsError    bool       // tool only
}

// Entry roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Part is one content part of an entry.
type Part struct {
	Type           string // "text" | "attachment"
	Text           string
	UploadPublicID string
	MediaType      string
	Name           string
	ByteSize       int64
	SHA256         string
	SourceTask     string
}

// Part types.
const (
	PartText       = "text"
	PartAttachment = "attachment"
)

// ToolCall is one call of an answer. Arguments is the raw text the model produced.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // raw text as produced; may be invalid JSON
}

// ToolSchema is one offered tool, as request_options.tools holds it.
type ToolSchema struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	Strict      *bool
}

// Finish is how a provider said an answer ended.
type Finish string

// The finish reasons of docs/api.md#runs.
const (
	FinishStop      Finish = "stop"
	FinishToolCalls Finish = "tool_calls"
	FinishLength    Finish = "length"
	FinishRefused   Finish = "refused"
)

// Valid reports whether f is one of the four finish reasons.
func (f Finish) Valid() bool {
	switch f {
	case FinishStop, FinishToolCalls, FinishLength, FinishRefused:
		return true
	}
	return false
}

// Response is a model's answer.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Finish    Finish
	Usage     Usage
}

// Usage is what a call consumed, in tokens.
type Usage struct{ InputTokens, OutputTokens int64 }

// Error is a provider failure with a stable key (provider_error,
// provider_overloaded, provider_model_unavailable, context_overflow, model_refused, …).
type Error struct {
	Key       string
	Detail    string
	Retryable bool
}

func (e *Error) Error() string { return e.Key + ": " + e.Detail }

// The error keys of model calls (docs/api.md#task-error-keys).
const (
	KeyProviderError            = "provider_error"
	KeyProviderOverloaded       = "provider_overloaded"
	KeyProviderModelUnavailable = "provider_model_unavailable"
	KeyContextOverflow          = "context_overflow"
	KeyModelRefused             = "model_refused"
)

// MediaReader opens the bytes of an attachment part.
type MediaReader interface {
	Open(ctx context.Context, uploadPublicID string) (io.ReadCloser, error)
}
