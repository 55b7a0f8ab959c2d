package model

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Provider types. openai-responses is reserved: a configuration naming it fails with a clear
// message instead of "unknown".
const (
	ProviderTypeMock      = "mock"
	ProviderTypeOpenAI    = "openai"
	ProviderTypeAnthropic = "anthropic"
)

var reservedProviderTypes = []string{"openai-responses"}

// Deferral modes (tool_deferral) and the variants of the Anthropic tool search tool.
const (
	DeferralKernel = "kernel"
	DeferralNative = "native"
	SearchBM25     = "bm25"
	SearchRegex    = "regex"
)

// The max_tokens_field values of an openai provider.
const (
	MaxCompletionTokensField = "max_completion_tokens"
	MaxTokensField           = "max_tokens"
)

// Defaults and bounds of provider attributes.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultAnthropicVersion = "2023-06-01"
	// DefaultMaxAttempts: the first attempt and three retries absorb a burst; longer outages
	// belong to the claim level.
	DefaultMaxAttempts = 4
	// MaxMaxAttempts bounds max_attempts: more attempts only delay a failure the claim reports.
	MaxMaxAttempts = 10
	// DefaultRetryMaxWait: a provider asking for a longer pause is better reported than waited for.
	DefaultRetryMaxWait = 60 * time.Second
	// MaxRetryMaxWait is the longest retry_max_wait an operator may set.
	MaxRetryMaxWait = 10 * time.Minute
	// DefaultIdleTimeout is above the normal silences of streaming providers.
	DefaultIdleTimeout = 5 * time.Minute
	// MaxIdleTimeout bounds idle_timeout: a silence longer than an hour is a stall, and the
	// claim's deadline ends the call anyway.
	MaxIdleTimeout = time.Hour
)

// Header is one configured extra request header. A value written env("NAME") is remembered as
// such, so that scrubbing hides it wherever it might be echoed.
type Header struct {
	Name    string
	Value   Secret
	FromEnv bool
}

// ProviderConfig is one model_provider block. Pointer fields are unset when nil; Resolved fills
// every default.
type ProviderConfig struct {
	Name string
	Type string

	BaseURL      string
	APIKey       Secret // zero: no credential header is sent
	Headers      []Header
	Stream       *bool
	ToolDeferral string
	MaxAttempts  int
	RetryMaxWait *time.Duration
	IdleTimeout  *time.Duration
	CAFile       string

	// openai only
	Organization   string
	Project        string
	MaxTokensField string
	StreamUsage    *bool

	// anthropic only
	AnthropicVersion string
	Betas            []string
	PromptCache      *bool
	ToolSearch       string
}

// Resolved returns the block with every unset attribute at its default for the type.
func (p ProviderConfig) Resolved() ProviderConfig {
	on := func(v *bool) *bool {
		if v != nil {
			return v
		}
		t := true
		return &t
	}
	dur := func(v *time.Duration, d time.Duration) *time.Duration {
		if v != nil {
			return v
		}
		return &d
	}
	if p.Type == ProviderTypeMock {
		return p
	}
	if p.BaseURL == "" {
		p.BaseURL = DefaultOpenAIBaseURL
		if p.Type == ProviderTypeAnthropic {
			p.BaseURL = DefaultAnthropicBaseURL
		}
	}
	p.BaseURL = strings.TrimSuffix(p.BaseURL, "/")
	p.Stream = on(p.Stream)
	if p.ToolDeferral == "" {
		p.ToolDeferral = DeferralKernel
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	p.RetryMaxWait = dur(p.RetryMaxWait, DefaultRetryMaxWait)
	p.IdleTimeout = dur(p.IdleTimeout, DefaultIdleTimeout)
	switch p.Type {
	case ProviderTypeOpenAI:
		if p.MaxTokensField == "" {
			p.MaxTokensField = MaxCompletionTokensField
		}
		p.StreamUsage = on(p.StreamUsage)
	case ProviderTypeAnthropic:
		if p.AnthropicVersion == "" {
			p.AnthropicVersion = DefaultAnthropicVersion
		}
		p.PromptCache = on(p.PromptCache)
		if p.ToolSearch == "" {
			p.ToolSearch = SearchBM25
		}
	}
	return p
}

// Streams reports whether the (resolved) provider streams its answers.
func (p ProviderConfig) Streams() bool { return p.Stream == nil || *p.Stream }

// NativeSearch is the tool search variant native deferral uses, "" in kernel mode.
func (p ProviderConfig) NativeSearch() string {
	if p.Type != ProviderTypeAnthropic || p.ToolDeferral != DeferralNative {
		return ""
	}
	if p.ToolSearch == "" {
		return SearchBM25
	}
	return p.ToolSearch
}

// Secrets are every value scrubbing must hide: the key and each header value read from env().
func (p ProviderConfig) Secrets() []string {
	var out []string
	if p.APIKey.IsSet() {
		out = append(out, p.APIKey.Reveal())
	}
	for _, h := range p.Headers {
		if h.FromEnv && h.Value.IsSet() {
			out = append(out, h.Value.Reveal())
		}
	}
	return out
}

// reservedHeaders are header names the adapters write themselves; an operator sets them through
// the attributes instead.
var reservedHeaders = []string{"host", "content-type", "content-length", "accept", "user-agent", "anthropic-version", "anthropic-beta"}

// credentialHeaders are header names that must be written env("NAME") when they appear in a
// header name: a credential in the file would be readable by anyone who reads the file.
var credentialHeaders = []string{"auth", "key", "token", "secret", "cookie"}

// CredentialLike reports whether a header name looks like it carries a credential.
func CredentialLike(name string) bool {
	n := strings.ToLower(name)
	for _, w := range credentialHeaders {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// checkProvider checks one model_provider block on its own; attr names the attribute the problem
// is about ("" for the block).
func checkProvider(p ProviderConfig) (attr, msg string) {
	if !providerPattern.MatchString(p.Name) {
		return "", fmt.Sprintf("model_provider %q: the name must match [a-z0-9][a-z0-9_.-]* (the provider part of a model ref)", p.Name)
	}
	switch {
	case p.Type == ProviderTypeMock:
		return "", ""
	case p.Type == ProviderTypeOpenAI || p.Type == ProviderTypeAnthropic:
	case slices.Contains(reservedProviderTypes, p.Type):
		return "type", fmt.Sprintf("model_provider %q: type %q is reserved for a later version; this version ships %q, %q and %q", p.Name, p.Type, ProviderTypeMock, ProviderTypeOpenAI, ProviderTypeAnthropic)
	default:
		return "type", fmt.Sprintf("model_provider %q: unknown type %q; this version ships %q, %q and %q", p.Name, p.Type, ProviderTypeMock, ProviderTypeOpenAI, ProviderTypeAnthropic)
	}
	if p.BaseURL != "" {
		if why := checkBaseURL(p.BaseURL); why != "" {
			return "base_url", fmt.Sprintf("model_provider %q: base_url %s", p.Name, why)
		}
	}
	for _, h := range p.Headers {
		n := strings.ToLower(h.Name)
		if slices.Contains(reservedHeaders, n) {
			return "headers", fmt.Sprintf("model_provider %q: headers may not set %s; the adapter writes it (use the attributes)", p.Name, h.Name)
		}
		if (n == "authorization" || n == "x-api-key") && p.APIKey.IsSet() {
			return "headers", fmt.Sprintf("model_provider %q: headers may not set %s while api_key is set", p.Name, h.Name)
		}
		if CredentialLike(h.Name) && !h.FromEnv {
			return "headers", fmt.Sprintf("model_provider %q: header %s looks like a credential and must be written env(\"NAME\")", p.Name, h.Name)
		}
	}
	switch p.ToolDeferral {
	case "", DeferralKernel:
	case DeferralNative:
		if p.Type != ProviderTypeAnthropic {
			return "tool_deferral", fmt.Sprintf("model_provider %q: tool_deferral \"native\" is for anthropic providers only; type %s has no provider-side deferral", p.Name, p.Type)
		}
	default:
		return "tool_deferral", fmt.Sprintf("model_provider %q: tool_deferral %q is not \"kernel\" or \"native\"", p.Name, p.ToolDeferral)
	}
	if p.MaxAttempts != 0 && (p.MaxAttempts < 1 || p.MaxAttempts > MaxMaxAttempts) {
		return "max_attempts", fmt.Sprintf("model_provider %q: max_attempts %d is outside 1..%d", p.Name, p.MaxAttempts, MaxMaxAttempts)
	}
	if p.RetryMaxWait != nil && (*p.RetryMaxWait < 0 || *p.RetryMaxWait > MaxRetryMaxWait) {
		return "retry_max_wait", fmt.Sprintf("model_provider %q: retry_max_wait %s is outside 0s..%s", p.Name, *p.RetryMaxWait, MaxRetryMaxWait)
	}
	if p.IdleTimeout != nil && (*p.IdleTimeout < 0 || *p.IdleTimeout > MaxIdleTimeout) {
		return "idle_timeout", fmt.Sprintf("model_provider %q: idle_timeout %s is outside 0s..%s", p.Name, *p.IdleTimeout, MaxIdleTimeout)
	}
	if p.Type == ProviderTypeOpenAI {
		switch p.MaxTokensField {
		case "", MaxCompletionTokensField, MaxTokensField:
		default:
			return "max_tokens_field", fmt.Sprintf("model_provider %q: max_tokens_field %q is not %q or %q", p.Name, p.MaxTokensField, MaxCompletionTokensField, MaxTokensField)
		}
		if p.AnthropicVersion != "" || p.Betas != nil || p.PromptCache != nil || p.ToolSearch != "" {
			return "", fmt.Sprintf("model_provider %q: anthropic_version, betas, prompt_cache and tool_search belong to anthropic providers", p.Name)
		}
	}
	if p.Type == ProviderTypeAnthropic {
		switch p.ToolSearch {
		case "", SearchBM25, SearchRegex:
		default:
			return "tool_search", fmt.Sprintf("model_provider %q: tool_search %q is not %q or %q", p.Name, p.ToolSearch, SearchBM25, SearchRegex)
		}
		if p.Organization != "" || p.Project != "" || p.MaxTokensField != "" || p.StreamUsage != nil {
			return "", fmt.Sprintf("model_provider %q: organization, project, max_tokens_field and stream_usage belong to openai providers", p.Name)
		}
		for _, b := range p.Betas {
			if strings.TrimSpace(b) == "" || strings.ContainsAny(b, ", \t\r\n") {
				return "betas", fmt.Sprintf("model_provider %q: beta name %q is empty or holds a comma or a space", p.Name, b)
			}
		}
	}
	return "", ""
}

// checkBaseURL is the base_url rule: an absolute http or https URL with a host, no user info,
// no query and no fragment. It returns why the URL breaks it, "" when it does not.
func checkBaseURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("must use http or https, not %q", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return "has no host"
	case u.User != nil:
		return "may not hold user info (credentials never travel in a URL)"
	case u.RawQuery != "" || u.ForceQuery:
		return "may not hold a query"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "may not hold a fragment"
	}
	return ""
}
