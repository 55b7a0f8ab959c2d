package model

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

func parseHCL(t *testing.T, src string) hcl.Body {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "nexus.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return f.Body
}

// specExample is the configuration (docs/operations.md#the-models-catalog), verbatim.
const specExample = `
default_model = "mock/scripted"

model_provider "mock" {
  type = "mock"          # this version ships only "mock"; "openai" and "anthropic" are reserved
}

model "mock/scripted" {
  display_name = "Mock (scripted)"
  capabilities {
    tools             = true
    vision            = true
    pdf               = true
    reasoning         = false
    context_window    = 200000
    max_output_tokens = 8192
  }
  pricing {
    input_per_mtok  = 0
    output_per_mtok = 0
    currency        = "USD"
  }
}
`

func TestDecodeConfigSpecExample(t *testing.T) {
	t.Parallel()
	cfg, rest, diags := DecodeConfig(parseHCL(t, specExample), nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := &Config{DefaultModel: "mock/scripted", Providers: []ProviderConfig{{Name: "mock", Type: "mock"}},
		Models: []Model{BuiltinModels()[0]}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if diags := gohcl.DecodeBody(rest, nil, &struct{}{}); diags.HasErrors() {
		t.Errorf("the rest of the body is not empty: %v", diags)
	}
	c, err := NewCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The example's block replaces the built-in mock/scripted; the built-in mock/text-only stays.
	if ms := c.Models(); len(ms) != 2 || ms[0].Ref != "mock/scripted" || ms[1].Ref != "mock/text-only" || c.Default().Ref != "mock/scripted" {
		t.Errorf("catalog %+v", c.Models())
	}
}

func TestDecodeConfigReadsEveryField(t *testing.T) {
	t.Parallel()
	src := `
listen = "kept for another reader"
model_provider "lab" { type = "mock" }
model "lab/big.v2:latest" {
  display_name = "Big"
  capabilities {
    reasoning      = true
    context_window = 1000
  }
  pricing {
    input_per_mtok  = 0.30
    output_per_mtok = 15
    currency        = "EUR"
  }
}
model "lab/bare" {}
plugin "x" {}
`
	cfg, rest, diags := DecodeConfig(parseHCL(t, src), nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := &Config{Providers: []ProviderConfig{{Name: "lab", Type: "mock"}}, Models: []Model{
		{Ref: "lab/big.v2:latest", Provider: "lab", Name: "big.v2:latest", DisplayName: "Big",
			Capabilities: Capabilities{Reasoning: true, ContextWindow: size(1000)},
			Pricing:      &Pricing{InputPerMTok: "0.3", OutputPerMTok: "15", Currency: "EUR"}},
		{Ref: "lab/bare", Provider: "lab", Name: "bare"},
	}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// What the catalog does not read stays for the next reader.
	content, diags := rest.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "listen"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "plugin", LabelNames: []string{"name"}}},
	})
	if diags.HasErrors() || content.Attributes["listen"] == nil || len(content.Blocks) != 1 {
		t.Errorf("rest: %v %v", content, diags)
	}
	c, err := NewCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Default().Ref != "lab/big.v2:latest" {
		t.Errorf("default %q", c.Default().Ref)
	}
	if bare, _ := c.Lookup("lab/bare"); bare.DisplayName != "lab/bare" || bare.Pricing != nil || bare.ContextWindow != nil {
		t.Errorf("bare model %+v", bare)
	}
}

func TestDecodeConfigNothingIsBuiltin(t *testing.T) {
	t.Parallel()
	cfg, _, diags := DecodeConfig(parseHCL(t, `listen = "x"`), nil)
	if diags.HasErrors() || cfg != nil {
		t.Errorf("got %+v %v, want nil (the built-in catalog)", cfg, diags)
	}
	// Providers alone keep the built-in models.
	cfg, _, diags = DecodeConfig(parseHCL(t, `model_provider "lab" { type = "mock" }`), nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c, err := NewCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Models()) != 2 {
		t.Errorf("models %v", c.Models())
	}
}

// TestDecodeBuiltinMockModels: builtin_mock_models = false beside a model block reaches the
// configuration, and its catalog holds the configured models only.
func TestDecodeBuiltinMockModels(t *testing.T) {
	t.Parallel()
	cfg, _, diags := DecodeConfig(parseHCL(t, "builtin_mock_models = false\nmodel_provider \"lab\" {\n  type = \"mock\"\n}\nmodel \"lab/x\" {}\n"), nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if cfg.BuiltinMockModels == nil || *cfg.BuiltinMockModels {
		t.Fatalf("builtin_mock_models not read: %+v", cfg)
	}
	c, err := NewCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ms := c.Models(); len(ms) != 1 || ms[0].Ref != "lab/x" {
		t.Errorf("models %+v", ms)
	}
}

func TestPriceTexts(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"0": "0", "0.30": "0.3", "3": "3", "15.0": "15", "0.0000001": "0.0000001", "2.5e1": "25",
		"1000000": "1000000", "0.1 + 0.2": "0.3", "12345678901234567890.123456789": "12345678901234567890.123456789",
	}
	for in, want := range cases {
		src := `model_provider "m" { type = "mock" }
model "m/x" {
  pricing {
    input_per_mtok  = ` + in + `
    output_per_mtok = 0
    currency        = "USD"
  }
}`
		cfg, _, diags := DecodeConfig(parseHCL(t, src), nil)
		if diags.HasErrors() {
			t.Errorf("%s: %v", in, diags)
			continue
		}
		if got := cfg.Models[0].Pricing.InputPerMTok; got != want {
			t.Errorf("price %s reads as %q, want %q", in, got, want)
		}
	}
}

func TestDecodeConfigErrorsPointAtTheBlock(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src string
		want      []string
	}{
		{"reserved type", "\nmodel_provider \"oa\" {\n  type = \"openai-responses\"\n}\n",
			[]string{"nexus.hcl:3,", `model_provider "oa": type "openai-responses" is reserved for a later version; this version ships "mock", "openai" and "anthropic"`}},
		{"unknown type", "model_provider \"x\" {\n  type = \"gemini\"\n}\n", []string{"nexus.hcl:2,", `unknown type "gemini"`}},
		{"missing type", "model_provider \"x\" {\n}\n", []string{"nexus.hcl:1,", `Missing required argument`, `"type"`}},
		{"provider attribute of a later version", "model_provider \"mock\" {\n  type = \"mock\"\n  api_key = \"k\"\n}\n",
			[]string{"nexus.hcl:3,", `api_key`}},
		{"undeclared provider", "model_provider \"mock\" {\n  type = \"mock\"\n}\n\nmodel \"other/x\" {\n}\n",
			[]string{"nexus.hcl:5,", `model "other/x": its provider "other" has no model_provider block`}},
		{"bad ref", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock\" {\n}\n", []string{"nexus.hcl:4,", `model "mock": a ref is provider/model`}},
		{"empty display name", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {\n  display_name = \"\"\n}\n",
			[]string{"nexus.hcl:4,", `model "mock/a": display_name is empty`}},
		{"unknown capability", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {\n  capabilities {\n    video = true\n  }\n}\n",
			[]string{"nexus.hcl:6,", `video`}},
		{"two capabilities blocks", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {\n  capabilities {}\n  capabilities {}\n}\n",
			[]string{"nexus.hcl:6,", `capabilities`}},
		{"fractional context window", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {\n  capabilities {\n    context_window = 1.5\n  }\n}\n",
			[]string{"nexus.hcl:6,"}},
		{"negative price", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {\n  pricing {\n    input_per_mtok = -1\n    output_per_mtok = 0\n    currency = \"USD\"\n  }\n}\n",
			[]string{"nexus.hcl:6,", `model "mock/a": pricing input_per_mtok must be a non-negative finite number`}},
		{"price as text", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {\n  pricing {\n    input_per_mtok = \"cheap\"\n    output_per_mtok = 0\n    currency = \"USD\"\n  }\n}\n",
			[]string{"nexus.hcl:6,", `model "mock/a": pricing input_per_mtok must be a number`}},
		{"missing currency", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {\n  pricing {\n    input_per_mtok = 1\n    output_per_mtok = 0\n  }\n}\n",
			[]string{"nexus.hcl:5,", `currency`}},
		{"bad currency", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {\n  pricing {\n    input_per_mtok = 1\n    output_per_mtok = 0\n    currency = \"dollars\"\n  }\n}\n",
			[]string{"nexus.hcl:4,", `pricing currency "dollars" is not an ISO 4217 code`}},
		{"unknown default", "default_model = \"mock/gone\"\n", []string{"nexus.hcl:1,", `default_model "mock/gone" is not in the built-in catalog`}},
		{"default not a string", "default_model = [1]\n", []string{"nexus.hcl:1,"}},
		{"model twice", "model_provider \"mock\" {\n  type = \"mock\"\n}\nmodel \"mock/a\" {}\nmodel \"mock/a\" {}\n",
			[]string{"nexus.hcl:5,", `model "mock/a" is declared twice`}},
		{"no mock and no model", "\nbuiltin_mock_models = false\n", []string{"nexus.hcl:2,", `builtin_mock_models = false leaves the catalog without a model`}},
		{"builtin_mock_models not a bool", "builtin_mock_models = \"no\"\n", []string{"nexus.hcl:1,"}},
		{"a mock provider of another type", "model_provider \"mock\" {\n  type = \"anthropic\"\n}\nmodel \"mock/c\" {\n  capabilities {\n    context_window = 1000\n    max_output_tokens = 10\n  }\n}\n",
			[]string{"nexus.hcl:1,", `the built-in mock models (mock/scripted, mock/text-only) need that name for the mock`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, _, diags := DecodeConfig(parseHCL(t, c.src), nil)
			if !diags.HasErrors() {
				t.Fatalf("accepted: %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("a configuration came back with errors: %+v", cfg)
			}
			msg := diags.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not contain %q", msg, w)
				}
			}
		})
	}
}
