package model

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// The configuration blocks of the models catalog in nexus.hcl
// (docs/operations.md#the-models-catalog):
//
//	default_model = "mock/scripted"
//	model_provider "mock" { type = "mock" }
//	model "mock/scripted" {
//	  display_name = "Mock (scripted)"
//	  capabilities { tools = true … context_window = 200000  max_output_tokens = 8192 }
//	  pricing { input_per_mtok = 0  output_per_mtok = 0  currency = "USD" }
//	}

type catalogFile struct {
	DefaultModel *hcl.Attribute  `hcl:"default_model,optional"`
	Providers    []providerBlock `hcl:"model_provider,block"`
	Models       []modelBlock    `hcl:"model,block"`
	Remain       hcl.Body        `hcl:",remain"`
}

type providerBlock struct {
	Name     string    `hcl:"name,label"`
	Type     string    `hcl:"type"`
	DefRange hcl.Range `hcl:",def_range"`
}

type modelBlock struct {
	Ref          string             `hcl:"ref,label"`
	DisplayName  *string            `hcl:"display_name,optional"`
	Capabilities *capabilitiesBlock `hcl:"capabilities,block"`
	Pricing      *pricingBlock      `hcl:"pricing,block"`
	DefRange     hcl.Range          `hcl:",def_range"`
}

type capabilitiesBlock struct {
	Tools           *bool  `hcl:"tools,optional"`
	Vision          *bool  `hcl:"vision,optional"`
	PDF             *bool  `hcl:"pdf,optional"`
	Reasoning       *bool  `hcl:"reasoning,optional"`
	ContextWindow   *int64 `hcl:"context_window,optional"`
	MaxOutputTokens *int64 `hcl:"max_output_tokens,optional"`
}

type pricingBlock struct {
	InputPerMTok  *hcl.Attribute `hcl:"input_per_mtok"`
	OutputPerMTok *hcl.Attribute `hcl:"output_per_mtok"`
	Currency      string         `hcl:"currency"`
}

// DecodeConfig reads the catalog's blocks (default_model, model_provider, model) from a
// configuration body, checks every rule NewCatalog checks, and returns the configuration with
// the rest of the body for other readers. Every diagnostic points at the block or attribute it
// is about. A body with none of the three gives a nil configuration (the built-in catalog).
func DecodeConfig(body hcl.Body) (*Config, hcl.Body, hcl.Diagnostics) {
	var f catalogFile
	diags := gohcl.DecodeBody(body, nil, &f)
	if diags.HasErrors() {
		return nil, f.Remain, diags
	}
	if f.DefaultModel == nil && len(f.Providers) == 0 && len(f.Models) == 0 {
		return nil, f.Remain, diags
	}
	cfg := &Config{}
	if f.DefaultModel != nil {
		diags = append(diags, gohcl.DecodeExpression(f.DefaultModel.Expr, nil, &cfg.DefaultModel)...)
	}
	for _, p := range f.Providers {
		cfg.Providers = append(cfg.Providers, ProviderConfig{Name: p.Name, Type: p.Type})
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
			case "model":
				if p.index < len(f.Models) {
					d.Subject = f.Models[p.index].DefRange.Ptr()
				}
			case "default":
				if f.DefaultModel != nil {
					d.Subject = f.DefaultModel.Range.Ptr()
				}
			}
			diags = append(diags, d)
		}
		return nil, f.Remain, diags
	}
	return cfg, f.Remain, diags
}

func (b modelBlock) model() (Model, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	provider, name, _ := strings.Cut(b.Ref, "/")
	m := Model{Ref: b.Ref, Provider: provider, Name: name}
	if b.DisplayName != nil {
		if strings.TrimSpace(*b.DisplayName) == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid models catalog",
				Detail: fmt.Sprintf("model %q: display_name is empty.", b.Ref), Subject: b.DefRange.Ptr()})
		}
		m.DisplayName = *b.DisplayName
	}
	if c := b.Capabilities; c != nil {
		flag := func(v *bool) bool { return v != nil && *v }
		m.Tools, m.Vision, m.PDF, m.Reasoning = flag(c.Tools), flag(c.Vision), flag(c.PDF), flag(c.Reasoning)
		m.ContextWindow, m.MaxOutputTokens = c.ContextWindow, c.MaxOutputTokens
	}
	if p := b.Pricing; p != nil {
		in, d1 := priceText(b.Ref, p.InputPerMTok)
		out, d2 := priceText(b.Ref, p.OutputPerMTok)
		diags = append(append(diags, d1...), d2...)
		m.Pricing = &Pricing{InputPerMTok: in, OutputPerMTok: out, Currency: p.Currency}
	}
	return m, diags
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
