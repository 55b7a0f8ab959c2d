package model

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func testEnv(name string) string {
	switch name {
	case "KEY":
		return "sk-test-7f1e"
	case "GW":
		return "gw-secret-9a"
	}
	return ""
}

// TestProviderRefusals covers every configuration refusal of the provider and model blocks: each
// names the file and line and never shows a credential.
func TestProviderRefusals(t *testing.T) {
	t.Parallel()
	oa := func(attrs string) string {
		return "model_provider \"oa\" {\n  type = \"openai\"\n" + attrs + "}\n"
	}
	an := func(attrs string) string {
		return "model_provider \"an\" {\n  type = \"anthropic\"\n" + attrs + "}\n"
	}
	sized := func(prov, body string) string {
		return "model \"" + prov + "/m\" {\n  capabilities {\n    context_window = 1000\n    max_output_tokens = 100\n    reasoning = true\n  }\n" + body + "}\n"
	}
	cases := []struct {
		name, src string
		want      []string
	}{
		{"literal key", oa("  api_key = \"sk-literal\"\n"), []string{"nexus.hcl:3,", `api_key must be written env("NAME")`}},
		{"key from a template", oa("  api_key = \"${env(\"KEY\")}\"\n"), []string{"nexus.hcl:3,", `api_key must be written env("NAME")`}},
		{"unset variable", oa("  api_key = env(\"MISSING\")\n"), []string{"nexus.hcl:3,", `reads the variable MISSING, which is unset or empty`}},
		{"ftp base url", oa("  base_url = \"ftp://example.test/v1\"\n"), []string{"nexus.hcl:3,", `base_url must use http or https`}},
		{"user info in base url", oa("  base_url = \"https://user:pw@example.test\"\n"), []string{"nexus.hcl:3,", `base_url may not hold user info`}},
		{"query in base url", oa("  base_url = \"https://example.test/v1?x=1\"\n"), []string{"nexus.hcl:3,", `may not hold a query`}},
		{"fragment in base url", oa("  base_url = \"https://example.test/v1#x\"\n"), []string{"nexus.hcl:3,", `may not hold a fragment`}},
		{"relative base url", oa("  base_url = \"/v1\"\n"), []string{"nexus.hcl:3,", `base_url must use http or https`}},
		{"betas on openai", oa("  betas = []\n"), []string{"nexus.hcl:3,", `betas does not belong to a provider of type openai`}},
		{"organization on anthropic", an("  organization = \"org\"\n"), []string{"nexus.hcl:3,", `organization does not belong to a provider of type anthropic`}},
		{"native on openai", oa("  tool_deferral = \"native\"\n"), []string{"nexus.hcl:3,", `tool_deferral "native" is for anthropic providers only`}},
		{"unknown deferral", an("  tool_deferral = \"lazy\"\n"), []string{"nexus.hcl:3,", `tool_deferral "lazy" is not "kernel" or "native"`}},
		{"attribute on mock", "model_provider \"mock\" {\n  type = \"mock\"\n  base_url = \"http://x\"\n}\n", []string{"nexus.hcl:3,", `base_url does not belong to a provider of type mock`}},
		{"unsupported attribute", oa("  colour = \"red\"\n"), []string{"nexus.hcl:3,", `unsupported attribute "colour"`}},
		{"reserved header", oa("  headers = { \"User-Agent\" = \"x\" }\n"), []string{"nexus.hcl:3,", `headers may not set User-Agent`}},
		{"reserved anthropic header", an("  headers = { \"anthropic-beta\" = \"x\" }\n"), []string{"nexus.hcl:3,", `headers may not set anthropic-beta`}},
		{"authorization beside api_key", oa("  api_key = env(\"KEY\")\n  headers = { \"Authorization\" = env(\"GW\") }\n"), []string{"nexus.hcl:4,", `headers may not set Authorization while api_key is set`}},
		{"literal credential header", oa("  headers = { \"api-key\" = \"gw-literal\" }\n"), []string{"nexus.hcl:3,", `header api-key looks like a credential and must be written env("NAME")`}},
		{"attempts zero", oa("  max_attempts = 0\n"), []string{"nexus.hcl:3,", `max_attempts -1 is outside 1..10`}},
		{"attempts eleven", oa("  max_attempts = 11\n"), []string{"nexus.hcl:3,", `max_attempts 11 is outside 1..10`}},
		{"wait too long", oa("  retry_max_wait = \"11m\"\n"), []string{"nexus.hcl:3,", `retry_max_wait 11m0s is outside 0s..10m0s`}},
		{"negative idle", oa("  idle_timeout = \"-1s\"\n"), []string{"nexus.hcl:3,", `idle_timeout -1s is outside`}},
		{"bad duration", oa("  idle_timeout = \"soon\"\n"), []string{"nexus.hcl:3,", `idle_timeout "soon" is not a duration`}},
		{"bad tokens field", oa("  max_tokens_field = \"limit\"\n"), []string{"nexus.hcl:3,", `max_tokens_field "limit" is not`}},
		{"bad tool search", an("  tool_search = \"fuzzy\"\n"), []string{"nexus.hcl:3,", `tool_search "fuzzy" is not "bm25" or "regex"`}},
		{"model without sizes", oa("") + "model \"oa/m\" {\n}\n", []string{"nexus.hcl:4,", `needs capabilities.context_window and capabilities.max_output_tokens`}},
		{"reasoning without the capability", oa("") + "model \"oa/m\" {\n  capabilities {\n    context_window = 1000\n    max_output_tokens = 100\n  }\n  reasoning {\n    effort = \"low\"\n  }\n}\n",
			[]string{"nexus.hcl:4,", `a reasoning block needs capabilities.reasoning = true`}},
		{"thinking on openai", oa("") + sized("oa", "  reasoning {\n    thinking = \"enabled\"\n  }\n"), []string{"nexus.hcl:4,", `thinking and budget_tokens belong to anthropic models`}},
		{"budget too small", an("") + sized("an", "  reasoning {\n    thinking = \"enabled\"\n    budget_tokens = 1000\n  }\n"), []string{"nexus.hcl:4,", `budget_tokens 1000 must be at least 1024 and less than max_output_tokens`}},
		{"budget without thinking", an("") + sized("an", "  reasoning {\n    budget_tokens = 2000\n  }\n"), []string{"nexus.hcl:4,", `budget_tokens is allowed only with thinking = "enabled"`}},
		{"bad thinking", an("") + sized("an", "  reasoning {\n    thinking = \"deep\"\n  }\n"), []string{"nexus.hcl:4,", `thinking "deep" is not`}},
		{"openai extra_body key", oa("") + sized("oa", "  extra_body = { stream = false }\n"), []string{"nexus.hcl:10,", `extra_body may not set "stream"; the openai adapter writes it`}},
		{"anthropic extra_body key", an("") + sized("an", "  extra_body = { thinking = {} }\n"), []string{"nexus.hcl:10,", `extra_body may not set "thinking"`}},
		{"extra_body not an object", oa("") + sized("oa", "  extra_body = [1]\n"), []string{"nexus.hcl:10,", `extra_body must be an object`}},
		{"negative media", oa("") + sized("oa", "  media {\n    images_max = -1\n  }\n"), []string{"nexus.hcl:4,", `media limits are 0 (no limit) or more`}},
		{"long id", oa("") + sized("oa", "  id = \""+strings.Repeat("x", 257)+"\"\n"), []string{"nexus.hcl:4,", `id is longer than 256 bytes`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, _, diags := DecodeConfig(parseHCL(t, c.src), testEnv)
			if !diags.HasErrors() {
				t.Fatalf("accepted: %+v", cfg)
			}
			msg := diags.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not contain %q", msg, w)
				}
			}
			for _, secret := range []string{"sk-test-7f1e", "gw-secret-9a", "sk-literal", "gw-literal", "pw@"} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error shows %q: %s", secret, msg)
				}
			}
		})
	}
}

func TestProviderConfigReadsEveryAttribute(t *testing.T) {
	t.Parallel()
	src := `
model_provider "oa" {
  type             = "openai"
  base_url         = "http://127.0.0.1:8000/v1/"
  api_key          = env("KEY")
  organization     = "org-1"
  project          = "proj-1"
  headers          = { "X-Title" = "Nexus", "api-key" = env("GW") }
  stream           = false
  max_attempts     = 2
  retry_max_wait   = "5s"
  idle_timeout     = "0s"
  max_tokens_field = "max_tokens"
  stream_usage     = false
}
model_provider "an" {
  type              = "anthropic"
  anthropic_version = "2024-01-01"
  betas             = ["a-1", "b-2"]
  prompt_cache      = false
  tool_deferral     = "native"
  tool_search       = "regex"
}
model "oa/qwen" {
  id = "Qwen/Qwen3-32B"
  capabilities {
    tools             = true
    strict_tools      = true
    reasoning         = true
    context_window    = 32768
    max_output_tokens = 4096
  }
  pricing {
    input_per_mtok        = 3
    output_per_mtok       = 15
    cached_input_per_mtok = 0.30
    cache_write_per_mtok  = 3.75
    currency              = "USD"
  }
  reasoning {
    effort = "low"
  }
  media {
    images_max = 1
  }
  extra_body = { top_p = 0.9, chat_template_kwargs = { enable_thinking = false } }
}
`
	cfg, _, diags := DecodeConfig(parseHCL(t, src), testEnv)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c, err := NewCatalogWith(cfg, map[string]Adapter{
		ProviderTypeOpenAI:    func(p ProviderConfig, ms []Model) (Provider, error) { return NewMock(p.Name), nil },
		ProviderTypeAnthropic: func(p ProviderConfig, ms []Model) (Provider, error) { return NewMock(p.Name), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.ProviderConfig("oa")
	if p.BaseURL != "http://127.0.0.1:8000/v1" || p.APIKey.Reveal() != "sk-test-7f1e" || p.APIKey.Env != "KEY" ||
		p.Organization != "org-1" || p.Project != "proj-1" || p.Streams() || p.MaxAttempts != 2 || *p.RetryMaxWait != 5*time.Second ||
		*p.IdleTimeout != 0 || p.MaxTokensField != "max_tokens" || *p.StreamUsage || p.ToolDeferral != "kernel" {
		t.Errorf("openai block: %+v", p)
	}
	if len(p.Headers) != 2 || p.Headers[0].Name != "X-Title" && p.Headers[1].Name != "X-Title" {
		t.Errorf("headers: %+v", p.Headers)
	}
	if got := strings.Join(p.Secrets(), ","); got != "sk-test-7f1e,gw-secret-9a" {
		t.Errorf("secrets %q", got)
	}
	a, _ := c.ProviderConfig("an")
	if a.BaseURL != DefaultAnthropicBaseURL || a.AnthropicVersion != "2024-01-01" || strings.Join(a.Betas, ",") != "a-1,b-2" ||
		*a.PromptCache || a.NativeSearch() != "regex" || !a.Streams() || a.MaxAttempts != 4 || *a.IdleTimeout != 5*time.Minute {
		t.Errorf("anthropic block: %+v", a)
	}
	m, _ := c.Lookup("oa/qwen")
	if m.WireID() != "Qwen/Qwen3-32B" || !m.StrictTools || m.ReasoningDefault.Effort != "low" || m.ProviderType != "openai" ||
		m.Pricing.CachedInputPerMTok != "0.3" || m.Pricing.CacheWritePerMTok != "3.75" {
		t.Errorf("model: %+v", m)
	}
	if l := m.MediaLimitsOf(); l.ImagesMax != 1 || l.ImageMaxBytes != 20_000_000 || l.AttachmentsMaxBytes != 32_000_000 {
		t.Errorf("limits %+v", l)
	}
	var keys []string
	for _, f := range m.ExtraBody {
		keys = append(keys, f.Key+"="+string(f.Value))
	}
	if got := strings.Join(keys, " "); got != `chat_template_kwargs={"enable_thinking":false} top_p=0.9` {
		t.Errorf("extra_body %s", got)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	t.Parallel()
	s := NewSecret("KEY", "sk-test-7f1e")
	p := ProviderConfig{Name: "oa", Type: "openai", APIKey: s, Headers: []Header{{Name: "api-key", Value: s, FromEnv: true}}}
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprintf("%v", p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), fmt.Sprintf("%s %q %x", s, s, s), string(js), s.String(), s.GoString()} {
		if strings.Contains(out, "sk-test") {
			t.Errorf("printed the key: %s", out)
		}
		if !strings.Contains(out, "[redacted]") {
			t.Errorf("no [redacted] in %s", out)
		}
	}
	if s.Reveal() != "sk-test-7f1e" {
		t.Error("Reveal lost the value")
	}
}

func TestCostWithCachePrices(t *testing.T) {
	t.Parallel()
	p := Pricing{InputPerMTok: "3", OutputPerMTok: "15", CachedInputPerMTok: "0.3", CacheWritePerMTok: "3.75", Currency: "USD"}
	// 180 uncached × 3 + 1024 × 0.30 + 0 + 42 × 15 = 1,477.2 millionths.
	got, err := p.Cost(Usage{InputTokens: 1204, OutputTokens: 42, CachedInputTokens: 1024})
	if err != nil || got.Amount != "0.001477" {
		t.Errorf("got %+v %v", got, err)
	}
	got, _ = p.Cost(Usage{InputTokens: 1000, CacheWriteInputTokens: 1000})
	if got.Amount != "0.003750" {
		t.Errorf("cache writes: %+v", got)
	}
	p.CachedInputPerMTok, p.CacheWritePerMTok = "", ""
	got, _ = p.Cost(Usage{InputTokens: 1204, OutputTokens: 42, CachedInputTokens: 1024})
	if got.Amount != "0.004242" {
		t.Errorf("cache prices default to the input price: %+v", got)
	}
}
