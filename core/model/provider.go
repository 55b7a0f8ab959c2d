package model

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// Provider sends one sealed request to a model and returns its answer.
// Implementations must be safe for concurrent use.
type Provider interface {
	// Name is the provider key used in model refs ("mock" in "mock/scripted").
	Name() string
	// Complete performs one model call. It must honour ctx cancellation.
	// A returned *Error settles the model task failed with Error.Key.
	Complete(ctx context.Context, req *Request) (*Response, error)
	// Capabilities are what the engine must know of the provider's wire when it seals a request
	// for it and stores its answers; the same value for every call.
	Capabilities() ProviderCapabilities
}

// ProviderCapabilities are the facts of a provider's wire the engine acts on
// (docs/providers.md, what a provider reports), as plain values a provider reports about itself:
// the engine reads them and never the provider's type.
type ProviderCapabilities struct {
	// CacheUsage says the provider counts prompt-cache reads and writes: a round's stored usage
	// then always carries cached_input_tokens and cache_write_input_tokens, zero included.
	CacheUsage bool
	// CallsNeedDefinitions says the provider refuses a request that replays tool calls but
	// defines no tools: a round that offers none but replays calls then records one placeholder
	// definition per replayed call name, with tool_choice "none" (RequestOptionsFor).
	CallsNeedDefinitions bool
}

// Request is a sealed request as a provider receives it (docs/providers.md, what a provider receives).
type Request struct {
	Ref             string       // "mock/scripted"
	Model           string       // the catalog entry's id: the model id the provider knows
	Entries         []Entry      // in order
	Tools           []ToolSchema // request_options.tools as offered
	ToolChoice      string       // "auto", "none" (placeholders only) or "" (no tools)
	MaxOutputTokens int
	Media           MediaReader // opens attachment bytes by upload public id
	// Reasoning is request_options.reasoning; nil when the model has none.
	Reasoning *Reasoning
	// ToolSearch is request_options.tool_search's variant ("bm25", "regex") when native
	// deferral applies to this request, else "".
	ToolSearch string
	// Run and TaskKey label the adapter's log lines; they are never sent.
	Run, TaskKey string
	// OnDelta, when set, hears the answer as the provider streams it, piece by piece and in
	// order (docs/providers.md#streamed-text): a streaming adapter calls it through Emitter. It
	// is never sent, and the answer Complete returns stays the record.
	OnDelta func(Delta)
}

// Delta is a piece of an answer as a provider streams it: text, or the name of a tool call as
// the call begins.
type Delta struct {
	Text     string
	ToolCall string
	// Attempt is the attempt the piece belongs to (1 for the first): a retried call streams its
	// answer again from the start, under the next attempt's number.
	Attempt int
}

// Emitter is the function a streaming adapter hands each piece of this attempt's answer to, in
// order; nil when nobody listens.
func (r *Request) Emitter(ctx context.Context) func(Delta) {
	if r.OnDelta == nil {
		return nil
	}
	n := AttemptOf(ctx)
	return func(d Delta) {
		d.Attempt = n
		r.OnDelta(d)
	}
}

// Reasoning is a model's one reasoning setting, recorded in request_options.reasoning.
type Reasoning struct {
	Thinking     string // "", "enabled", "adaptive", "disabled"
	BudgetTokens int
	Effort       string
}

// Thinking values of a reasoning block.
const (
	ThinkingEnabled  = "enabled"
	ThinkingAdaptive = "adaptive"
	ThinkingDisabled = "disabled"
)

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
	Type           string // "text" | "attachment" | "provider_block"
	Text           string
	UploadPublicID string
	MediaType      string
	Name           string
	ByteSize       int64
	SHA256         string
	SourceTask     string
	// Format is a provider_block's adapter family ("anthropic"); Block is the provider's block,
	// byte for byte as recorded. Only the adapter of that family reads it.
	Format string
	Block  json.RawMessage
}

// Part types.
const (
	PartText          = "text"
	PartAttachment    = "attachment"
	PartProviderBlock = "provider_block"
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
	// DeferLoading marks an entry the provider keeps out of the model's context until its own
	// tool search loads it (native deferral only).
	DeferLoading bool
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
	// Content is the answer's ordered text and provider_block parts; nil means one text part
	// holding Text when Text is not empty (the mock's case).
	Content []Part
}

// Usage is what a call consumed, in tokens.
type Usage struct {
	InputTokens, OutputTokens int64 // input includes cached and cache-written tokens
	CachedInputTokens         int64 // read from a prompt cache
	CacheWriteInputTokens     int64 // written to a prompt cache
	Estimated                 bool  // the provider reported nothing: the counts are the estimate
}

// Error is a provider failure with a stable key (provider_error, provider_overloaded,
// provider_http_error, provider_model_unavailable, provider_context_overflow,
// provider_media_refused, model_refused, model_capability_unavailable, …).
type Error struct {
	Key       string
	Detail    string
	Retryable bool
	// RetryAfter is the wait the provider asked for; 0 when it said nothing.
	RetryAfter time.Duration
	// Status is the HTTP status; 0 for transport failures.
	Status int
	// RequestID is the provider's request id, for logs and the detail.
	RequestID string
	// RefusedUpload is, for provider_media_refused, the upload the provider named.
	RefusedUpload string
}

func (e *Error) Error() string { return e.Key + ": " + e.Detail }

// The error keys of model calls (docs/providers.md, error keys).
const (
	KeyProviderError              = "provider_error"
	KeyProviderOverloaded         = "provider_overloaded"
	KeyProviderHTTPError          = "provider_http_error"
	KeyProviderModelUnavailable   = "provider_model_unavailable"
	KeyProviderContextOverflow    = "provider_context_overflow"
	KeyProviderMediaRefused       = "provider_media_refused"
	KeyContextOverflow            = "context_overflow"
	KeyModelRefused               = "model_refused"
	KeyModelCapabilityUnavailable = CodeModelCapabilityUnavailable
)

// AnswerContent is the answer's ordered content: Content, or one text part holding Text when
// Content is nil and Text is not empty.
func (r *Response) AnswerContent() []Part {
	if r.Content != nil {
		return r.Content
	}
	if r.Text != "" {
		return []Part{{Type: PartText, Text: r.Text}}
	}
	return nil
}

// MediaReader opens the bytes of an attachment part.
type MediaReader interface {
	Open(ctx context.Context, uploadPublicID string) (io.ReadCloser, error)
}
