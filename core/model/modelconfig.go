package model

import (
	"fmt"
	"regexp"
	"slices"
)

// MaxModelIDBytes bounds a model's wire id: far above any provider's model names, small enough to
// keep log lines and request bodies sane.
const MaxModelIDBytes = 256

// MinBudgetTokens is the smallest thinking budget the Anthropic API accepts.
const MinBudgetTokens = 1024

// MediaLimits are a model's media limits as configured (media { … }); a nil field takes the
// provider type's default, and 0 means no limit.
type MediaLimits struct {
	ImageMaxBytes       *int64
	ImageMaxEdge        *int64
	ImagesMax           *int64
	PDFMaxBytes         *int64
	PDFsMax             *int64
	AttachmentsMaxBytes *int64
}

// Limits are a model's effective media limits; 0 means no limit.
type Limits struct {
	ImageMaxBytes, ImageMaxEdge, ImagesMax, PDFMaxBytes, PDFsMax, AttachmentsMaxBytes int64
}

// The media defaults of each real type, from the providers' documented limits.
var (
	// anthropicLimits: an image's base64 text may be at most 5 MiB (3,932,160 raw bytes); larger
	// images than 8,000 pixels a side are refused, and more than 20 images per request lower the
	// edge to 2,000, which images_max = 20 avoids; the whole request may be at most 32 MB, and
	// base64 grows bytes by a third, so 20 MB of attachments leaves room for the text.
	anthropicLimits = Limits{ImageMaxBytes: 3_932_160, ImageMaxEdge: 8000, ImagesMax: 20, PDFMaxBytes: 20_000_000,
		AttachmentsMaxBytes: 20_000_000}
	// openaiLimits: 20 MB per image, 50 images, 32 MB of files per request.
	openaiLimits = Limits{ImageMaxBytes: 20_000_000, ImagesMax: 50, PDFMaxBytes: 32_000_000, AttachmentsMaxBytes: 32_000_000}
)

// MediaLimitsOf is the effective limits of a model: its configured values over its type's
// defaults (the mock has none).
func (m Model) MediaLimitsOf() Limits {
	var l Limits
	switch m.ProviderType {
	case ProviderTypeAnthropic:
		l = anthropicLimits
	case ProviderTypeOpenAI:
		l = openaiLimits
	}
	if c := m.Media; c != nil {
		set := func(dst *int64, v *int64) {
			if v != nil {
				*dst = *v
			}
		}
		set(&l.ImageMaxBytes, c.ImageMaxBytes)
		set(&l.ImageMaxEdge, c.ImageMaxEdge)
		set(&l.ImagesMax, c.ImagesMax)
		set(&l.PDFMaxBytes, c.PDFMaxBytes)
		set(&l.PDFsMax, c.PDFsMax)
		set(&l.AttachmentsMaxBytes, c.AttachmentsMaxBytes)
	}
	return l
}

// reservedExtraBody are the body keys each adapter writes itself; extra_body may not set them.
var reservedExtraBody = map[string][]string{
	ProviderTypeOpenAI: {"model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens",
		"reasoning_effort", "stream", "stream_options"},
	ProviderTypeAnthropic: {"model", "max_tokens", "system", "messages", "tools", "tool_choice", "thinking",
		"output_config", "stream"},
}

// effortPattern is a reasoning effort: a lower-case word ("low", "medium", "high", "minimal").
var effortPattern = regexp.MustCompile(`^[a-z][a-z_]*$`)

// checkModelForType checks the model's facts that depend on its provider's type (ProviderType
// is set); attr names the attribute or block at fault.
func checkModelForType(m Model) (attr, msg string) {
	real := m.ProviderType == ProviderTypeOpenAI || m.ProviderType == ProviderTypeAnthropic
	if m.ID != "" && len(m.ID) > MaxModelIDBytes {
		return "id", fmt.Sprintf("model %q: id is longer than %d bytes", m.Ref, MaxModelIDBytes)
	}
	if real && (m.ContextWindow == nil || m.MaxOutputTokens == nil) {
		return "capabilities", fmt.Sprintf("model %q: a model of an %s provider needs capabilities.context_window and capabilities.max_output_tokens", m.Ref, m.ProviderType)
	}
	if r := m.ReasoningDefault; r != nil {
		if !m.Capabilities.Reasoning {
			return "reasoning", fmt.Sprintf("model %q: a reasoning block needs capabilities.reasoning = true", m.Ref)
		}
		if r.Effort != "" && !effortPattern.MatchString(r.Effort) {
			return "reasoning", fmt.Sprintf("model %q: reasoning effort %q is not a lower-case word", m.Ref, r.Effort)
		}
		if m.ProviderType == ProviderTypeOpenAI && (r.Thinking != "" || r.BudgetTokens != 0) {
			return "reasoning", fmt.Sprintf("model %q: thinking and budget_tokens belong to anthropic models; an openai model takes effort only", m.Ref)
		}
		switch r.Thinking {
		case "", ThinkingEnabled, ThinkingAdaptive, ThinkingDisabled:
		default:
			return "reasoning", fmt.Sprintf("model %q: reasoning thinking %q is not \"enabled\", \"adaptive\" or \"disabled\"", m.Ref, r.Thinking)
		}
		if r.BudgetTokens != 0 && r.Thinking != ThinkingEnabled {
			return "reasoning", fmt.Sprintf("model %q: budget_tokens is allowed only with thinking = \"enabled\"", m.Ref)
		}
		if r.Thinking == ThinkingEnabled {
			limit := int64(-1)
			if m.MaxOutputTokens != nil {
				limit = *m.MaxOutputTokens
			}
			if r.BudgetTokens < MinBudgetTokens || (limit >= 0 && int64(r.BudgetTokens) >= limit) {
				return "reasoning", fmt.Sprintf("model %q: budget_tokens %d must be at least %d and less than max_output_tokens", m.Ref, r.BudgetTokens, MinBudgetTokens)
			}
		}
	}
	if l := m.Media; l != nil {
		for _, v := range []*int64{l.ImageMaxBytes, l.ImageMaxEdge, l.ImagesMax, l.PDFMaxBytes, l.PDFsMax, l.AttachmentsMaxBytes} {
			if v != nil && *v < 0 {
				return "media", fmt.Sprintf("model %q: media limits are 0 (no limit) or more", m.Ref)
			}
		}
	}
	if len(m.ExtraBody) > 0 {
		if !real {
			return "extra_body", fmt.Sprintf("model %q: extra_body belongs to openai and anthropic models", m.Ref)
		}
		for _, f := range m.ExtraBody {
			if slices.Contains(reservedExtraBody[m.ProviderType], f.Key) {
				return "extra_body", fmt.Sprintf("model %q: extra_body may not set %q; the %s adapter writes it", m.Ref, f.Key, m.ProviderType)
			}
		}
	}
	return "", ""
}
