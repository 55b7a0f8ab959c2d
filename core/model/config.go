package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// The configuration blocks of the models catalog in nexus.hcl (docs/providers.md):
//
//	default_model = "openai/gpt"
//	model_provider "openai" { type = "openai"  api_key = env("OPENAI_API_KEY") }
//	model "openai/gpt" {
//	  id = "gpt-5.1"
//	  capabilities { tools = true … context_window = 400000  max_output_tokens = 16000 }
//	  pricing { input_per_mtok = 1.25  output_per_mtok = 10  currency = "USD" }
//	}

type catalogFile struct {
	DefaultModel *hcl.Attribute  `hcl:"default_model,optional"`
	BuiltinMock  *hcl.Attribute  `hcl:"builtin_mock_models,optional"`
	Providers    []providerBlock `hcl:"model_provider,block"`
	Models       []modelBlock    `hcl:"model,block"`
	Remain       hcl.Body        `hcl:",remain"`
}

type providerBlock struct {
	Name     string    `hcl:"name,label"`
	Body     hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type modelBlock struct {
	Ref          string             `hcl:"ref,label"`
	ID           *string            `hcl:"id,optional"`
	DisplayName  *string            `hcl:"display_name,optional"`
	Capabilities *capabilitiesBlock `hcl:"capabilities,block"`
	Pricing      *pricingBlock      `hcl:"pricing,block"`
	Reasoning    *reasoningBlock    `hcl:"reasoning,block"`
	Media        *mediaBlock        `hcl:"media,block"`
	ExtraBody    *hcl.Attribute     `hcl:"extra_body,optional"`
	DefRange     hcl.Range          `hcl:",def_range"`
	Body         hcl.Body           `hcl:",remain"`
}

type capabilitiesBlock struct {
	Tools           *bool  `hcl:"tools,optional"`
	Vision          *bool  `hcl:"vision,optional"`
	PDF             *bool  `hcl:"pdf,optional"`
	Reasoning       *bool  `hcl:"reasoning,optional"`
	StrictTools     *bool  `hcl:"strict_tools,optional"`
	ContextWindow   *int64 `hcl:"context_window,optional"`
	MaxOutputTokens *int64 `hcl:"max_output_tokens,optional"`
}

type pricingBlock struct {
	InputPerMTok       *hcl.Attribute `hcl:"input_per_mtok"`
	OutputPerMTok      *hcl.Attribute `hcl:"output_per_mtok"`
	CachedInputPerMTok *hcl.Attribute `hcl:"cached_input_per_mtok,optional"`
	CacheWritePerMTok  *hcl.Attribute `hcl:"cache_write_per_mtok,optional"`
	Currency           string         `hcl:"currency"`
}

type reasoningBlock struct {
	Effort       *string `hcl:"effort,optional"`
	Thinking     *string `hcl:"thinking,optional"`
	BudgetTokens *int    `hcl:"budget_tokens,optional"`
}

type mediaBlock struct {
	ImageMaxBytes       *int64 `hcl:"image_max_bytes,optional"`
	ImageMaxEdge        *int64 `hcl:"image_max_edge,optional"`
	ImagesMax           *int64 `hcl:"images_max,optional"`
	PDFMaxBytes         *int64 `hcl:"pdf_max_bytes,optional"`
	PDFsMax             *int64 `hcl:"pdfs_max,optional"`
	AttachmentsMaxBytes *int64 `hcl:"attachments_max_bytes,optional"`
}

// The attributes of a model_provider block, by the types they belong to.
var (
	commonProviderAttrs    = []string{"type", "base_url", "api_key", "headers", "stream", "tool_deferral", "max_attempts", "retry_max_wait", "idle_timeout", "ca_file"}
	openaiProviderAttrs    = []string{"organization", "project", "max_tokens_field", "stream_usage"}
	anthropicProviderAttrs = []string{"anthropic_version", "betas", "prompt_cache", "tool_search"}
)

// Getenv reads an environment variable; configuration reads env("NAME") through it.
type Getenv func(string) string

// DecodeConfig reads the catalog's blocks (default_model, builtin_mock_models, model_provider,
// model) from a configuration body, checks every rule NewCatalog checks, and returns the
// configuration with the rest of the body for other readers. Every diagnostic points at the block or attribute it
// is about and never shows a credential. env("NAME") is read through getenv (nil: no variable is
// set). A body with none of them gives a nil configuration (the built-in catalog).
func DecodeConfig(body hcl.Body, getenv Getenv) (*Config, hcl.Body, hcl.Diagnostics) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var f catalogFile
	diags := gohcl.DecodeBody(body, nil, &f)
	if diags.HasErrors() {
		return nil, f.Remain, diags
	}
	if f.DefaultModel == nil && f.BuiltinMock == nil && len(f.Providers) == 0 && len(f.Models) == 0 {
		return nil, f.Remain, diags
	}
	cfg := &Config{}
	if f.DefaultModel != nil {
		diags = append(diags, gohcl.DecodeExpression(f.DefaultModel.Expr, nil, &cfg.DefaultModel)...)
	}
	if f.BuiltinMock != nil {
		var on bool
		diags = append(diags, gohcl.DecodeExpression(f.BuiltinMock.Expr, nil, &on)...)
		cfg.BuiltinMockModels = &on
	}
	provAttrs := make([]hcl.Attributes, len(f.Providers))
	for i, b := range f.Providers {
		p, attrs, d := b.provider(getenv)
		diags = append(diags, d...)
		provAttrs[i] = attrs
		cfg.Providers = append(cfg.Providers, p)
	}
	for _, b := range f.Models {
		m, d := b.model()
		diags = append(diags, d...)
		cfg.Models = append(cfg.Models, m)
	}
	if diags.HasErrors() {
		return nil, f.Remain, diags
	}
	if _, problems := build(*cfg); len(problems) > 0 {
		for _, p := range problems {
			d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid models catalog", Detail: p.msg + "."}
			switch p.which {
			case "provider":
				d.Subject = f.Providers[p.index].DefRange.Ptr()
				if a, ok := provAttrs[p.index][p.attr]; ok {
					d.Subject = a.Range.Ptr()
				}
			case "model":
				if p.index < len(f.Models) {
					d.Subject = f.Models[p.index].subject(p.attr)
				}
			case "default":
				if f.DefaultModel != nil {
					d.Subject = f.DefaultModel.Range.Ptr()
				}
			case "builtin":
				if f.BuiltinMock != nil {
					d.Subject = f.BuiltinMock.Range.Ptr()
				}
			}
			diags = append(diags, d)
		}
		return nil, f.Remain, diags
	}
	return cfg, f.Remain, diags
}

func catalogDiag(subject hcl.Range, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid models catalog",
		Detail: fmt.Sprintf(format, args...) + ".", Subject: subject.Ptr()}
}

// provider reads a model_provider block: which attributes it may hold depends on its type.
func (b providerBlock) provider(getenv Getenv) (ProviderConfig, hcl.Attributes, hcl.Diagnostics) {
	p := ProviderConfig{Name: b.Name}
	attrs, diags := b.Body.JustAttributes()
	if diags.HasErrors() {
		return p, attrs, diags
	}
	typeAttr, ok := attrs["type"]
	if !ok {
		return p, attrs, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Missing required argument",
			Detail: `The argument "type" is required, but no definition was found.`, Subject: b.DefRange.Ptr()}}
	}
	if d := gohcl.DecodeExpression(typeAttr.Expr, nil, &p.Type); d.HasErrors() {
		return p, attrs, d
	}
	allowed := []string{"type"}
	switch p.Type {
	case ProviderTypeOpenAI:
		allowed = append(slices.Clone(commonProviderAttrs), openaiProviderAttrs...)
	case ProviderTypeAnthropic:
		allowed = append(slices.Clone(commonProviderAttrs), anthropicProviderAttrs...)
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return attrs[names[i]].Range.Start.Byte < attrs[names[j]].Range.Start.Byte })
	for _, n := range names {
		a := attrs[n]
		if slices.Contains(allowed, n) {
			continue
		}
		known := slices.Contains(commonProviderAttrs, n) || slices.Contains(openaiProviderAttrs, n) || slices.Contains(anthropicProviderAttrs, n)
		if known && (p.Type == ProviderTypeMock || p.Type == ProviderTypeOpenAI || p.Type == ProviderTypeAnthropic) {
			diags = append(diags, catalogDiag(a.Range, "model_provider %q: %s does not belong to a provider of type %s", b.Name, n, p.Type))
		} else if !known {
			diags = append(diags, catalogDiag(a.Range, "model_provider %q: unsupported attribute %q", b.Name, n))
		}
	}
	if diags.HasErrors() {
		return p, attrs, diags
	}
	str := func(name string, dst *string) {
		if a, ok := attrs[name]; ok {
			diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, dst)...)
		}
	}
	boolean := func(name string, dst **bool) {
		if a, ok := attrs[name]; ok {
			var v bool
			diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &v)...)
			*dst = &v
		}
	}
	duration := func(name string, dst **time.Duration) {
		if a, ok := attrs[name]; ok {
			var s string
			if d := gohcl.DecodeExpression(a.Expr, nil, &s); d.HasErrors() {
				diags = append(diags, d...)
				return
			}
			v, err := time.ParseDuration(s)
			if err != nil {
				diags = append(diags, catalogDiag(a.Range, "model_provider %q: %s %q is not a duration such as \"60s\"", b.Name, name, s))
				return
			}
			*dst = &v
		}
	}
	str("base_url", &p.BaseURL)
	str("tool_deferral", &p.ToolDeferral)
	str("ca_file", &p.CAFile)
	str("organization", &p.Organization)
	str("project", &p.Project)
	str("max_tokens_field", &p.MaxTokensField)
	str("anthropic_version", &p.AnthropicVersion)
	str("tool_search", &p.ToolSearch)
	boolean("stream", &p.Stream)
	boolean("stream_usage", &p.StreamUsage)
	boolean("prompt_cache", &p.PromptCache)
	duration("retry_max_wait", &p.RetryMaxWait)
	duration("idle_timeout", &p.IdleTimeout)
	if a, ok := attrs["max_attempts"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &p.MaxAttempts)...)
		if p.MaxAttempts == 0 {
			p.MaxAttempts = -1 // written 0: out of range, never the default
		}
	}
	if a, ok := attrs["betas"]; ok {
		p.Betas = []string{}
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &p.Betas)...)
	}
	if a, ok := attrs["api_key"]; ok {
		v, d := envValue(b.Name, "api_key", a.Expr, getenv)
		diags = append(diags, d...)
		p.APIKey = v
	}
	if a, ok := attrs["headers"]; ok {
		pairs, d := hcl.ExprMap(a.Expr)
		diags = append(diags, d...)
		for _, kv := range pairs {
			var name string
			if d := gohcl.DecodeExpression(kv.Key, nil, &name); d.HasErrors() {
				diags = append(diags, d...)
				continue
			}
			h := Header{Name: name}
			if isEnvCall(kv.Value) {
				h.Value, d = envValue(b.Name, "header "+name, kv.Value, getenv)
				diags = append(diags, d...)
				h.FromEnv = true
			} else if CredentialLike(name) {
				diags = append(diags, catalogDiag(kv.Value.Range(), "model_provider %q: header %s looks like a credential and must be written env(\"NAME\")", b.Name, name))
				continue
			} else {
				var v string
				diags = append(diags, gohcl.DecodeExpression(kv.Value, nil, &v)...)
				h.Value = NewSecret("", v)
			}
			p.Headers = append(p.Headers, h)
		}
	}
	return p, attrs, diags
}

// isEnvCall reports whether an expression is env("NAME"): a call of env with one literal string.
func isEnvCall(expr hcl.Expression) bool {
	call, ok := expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "env" || len(call.Args) != 1 || len(call.Args[0].Variables()) > 0 {
		return false
	}
	v, d := call.Args[0].Value(nil)
	return !d.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type() == cty.String && v.AsString() != ""
}

// envValue reads a credential written env("NAME"). The syntax tree is checked, not the value, so
// a key pasted into the file is refused even when it looks harmless; an unset or empty variable
// is refused by its name. No diagnostic shows a value.
func envValue(block, what string, expr hcl.Expression, getenv Getenv) (Secret, hcl.Diagnostics) {
	if !isEnvCall(expr) {
		return Secret{}, hcl.Diagnostics{catalogDiag(expr.Range(), "model_provider %q: %s must be written env(\"NAME\"); a credential is never written into the file", block, what)}
	}
	v, _ := expr.(*hclsyntax.FunctionCallExpr).Args[0].Value(nil)
	name := v.AsString()
	val := getenv(name)
	if val == "" {
		return Secret{}, hcl.Diagnostics{catalogDiag(expr.Range(), "model_provider %q: %s reads the variable %s, which is unset or empty", block, what, name)}
	}
	return NewSecret(name, val), nil
}

// subject is the range a model problem points at: the attribute or block named, else the
// block's header.
func (b modelBlock) subject(attr string) *hcl.Range {
	switch {
	case attr == "extra_body" && b.ExtraBody != nil:
		return b.ExtraBody.Range.Ptr()
	}
	return b.DefRange.Ptr()
}

func (b modelBlock) model() (Model, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if d := gohcl.DecodeBody(b.Body, nil, &struct{}{}); d.HasErrors() {
		diags = append(diags, d...)
	}
	provider, name, _ := strings.Cut(b.Ref, "/")
	m := Model{Ref: b.Ref, Provider: provider, Name: name}
	if b.ID != nil {
		if *b.ID == "" {
			diags = append(diags, catalogDiag(b.DefRange, "model %q: id is empty", b.Ref))
		}
		m.ID = *b.ID
	}
	if b.DisplayName != nil {
		if strings.TrimSpace(*b.DisplayName) == "" {
			diags = append(diags, catalogDiag(b.DefRange, "model %q: display_name is empty", b.Ref))
		}
		m.DisplayName = *b.DisplayName
	}
	if c := b.Capabilities; c != nil {
		flag := func(v *bool) bool { return v != nil && *v }
		m.Tools, m.Vision, m.PDF, m.Reasoning, m.StrictTools = flag(c.Tools), flag(c.Vision), flag(c.PDF), flag(c.Reasoning), flag(c.StrictTools)
		m.ContextWindow, m.MaxOutputTokens = c.ContextWindow, c.MaxOutputTokens
	}
	if p := b.Pricing; p != nil {
		in, d1 := priceText(b.Ref, p.InputPerMTok)
		out, d2 := priceText(b.Ref, p.OutputPerMTok)
		diags = append(append(diags, d1...), d2...)
		m.Pricing = &Pricing{InputPerMTok: in, OutputPerMTok: out, Currency: p.Currency}
		if p.CachedInputPerMTok != nil {
			v, d := priceText(b.Ref, p.CachedInputPerMTok)
			diags = append(diags, d...)
			m.Pricing.CachedInputPerMTok = v
		}
		if p.CacheWritePerMTok != nil {
			v, d := priceText(b.Ref, p.CacheWritePerMTok)
			diags = append(diags, d...)
			m.Pricing.CacheWritePerMTok = v
		}
	}
	if r := b.Reasoning; r != nil {
		m.ReasoningDefault = &Reasoning{}
		if r.Effort != nil {
			m.ReasoningDefault.Effort = *r.Effort
		}
		if r.Thinking != nil {
			m.ReasoningDefault.Thinking = *r.Thinking
		}
		if r.BudgetTokens != nil {
			m.ReasoningDefault.BudgetTokens = *r.BudgetTokens
		}
	}
	if md := b.Media; md != nil {
		m.Media = &MediaLimits{ImageMaxBytes: md.ImageMaxBytes, ImageMaxEdge: md.ImageMaxEdge, ImagesMax: md.ImagesMax,
			PDFMaxBytes: md.PDFMaxBytes, PDFsMax: md.PDFsMax, AttachmentsMaxBytes: md.AttachmentsMaxBytes}
	}
	if a := b.ExtraBody; a != nil {
		fields, d := extraBody(b.Ref, a)
		diags = append(diags, d...)
		m.ExtraBody = fields
	}
	return m, diags
}

// extraBody evaluates extra_body to its top-level JSON fields in byte order of their keys.
func extraBody(ref string, a *hcl.Attribute) ([]ExtraField, hcl.Diagnostics) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, diags
	}
	if v.IsNull() || !v.IsKnown() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return nil, hcl.Diagnostics{catalogDiag(a.Range, "model %q: extra_body must be an object", ref)}
	}
	raw, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, hcl.Diagnostics{catalogDiag(a.Range, "model %q: extra_body cannot be written as JSON", ref)}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, hcl.Diagnostics{catalogDiag(a.Range, "model %q: extra_body cannot be written as JSON", ref)}
	}
	out := make([]ExtraField, 0, len(obj))
	for k, val := range obj {
		out = append(out, ExtraField{Key: k, Value: val})
	}
	slices.SortFunc(out, func(x, y ExtraField) int { return strings.Compare(x.Key, y.Key) })
	return out, nil
}

// priceText evaluates a price and writes it as the shortest decimal that names the configured
// number (0.30 is "0.3"; HCL reads number literals at 512 bits, so a decimal literal comes back
// exactly as written).
func priceText(ref string, attr *hcl.Attribute) (string, hcl.Diagnostics) {
	v, diags := attr.Expr.Value(nil)
	if diags.HasErrors() {
		return "", diags
	}
	refuse := func(why string) (string, hcl.Diagnostics) {
		return "", hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid models catalog",
			Detail: fmt.Sprintf("model %q: pricing %s %s.", ref, attr.Name, why), Subject: attr.Range.Ptr()}}
	}
	// The value's own methods are enough to check it: a known, non-null number.
	if v.IsNull() || !v.IsKnown() || v.Type().FriendlyName() != "number" {
		return refuse("must be a number")
	}
	f := v.AsBigFloat()
	if f.Sign() < 0 || f.IsInf() {
		return refuse("must be a non-negative finite number")
	}
	return f.Text('f', -1), nil
}
