package model

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
)

func size(v int64) *int64 { return &v }

func TestBuiltinCatalog(t *testing.T) {
	t.Parallel()
	c, err := NewCatalog(&Config{})
	if err != nil {
		t.Fatal(err)
	}
	zeroUSD := &Pricing{InputPerMTok: "0", OutputPerMTok: "0", Currency: "USD"}
	want := []Model{
		{Ref: "mock/scripted", Provider: "mock", Name: "scripted", DisplayName: "Mock (scripted)",
			Capabilities: Capabilities{Tools: true, Vision: true, PDF: true, Reasoning: false, ContextWindow: size(200000), MaxOutputTokens: size(8192)},
			Pricing:      zeroUSD},
		{Ref: "mock/text-only", Provider: "mock", Name: "text-only", DisplayName: "Mock (text only)",
			Capabilities: Capabilities{Tools: true, ContextWindow: size(200000), MaxOutputTokens: size(8192)},
			Pricing:      zeroUSD},
	}
	for i := range want {
		want[i].ProviderType = ProviderTypeMock
	}
	if diff := cmp.Diff(want, c.Models()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if got := c.Default().Ref; got != "mock/scripted" {
		t.Errorf("default %q", got)
	}
	p, ok := c.Provider("mock")
	if !ok || p.Name() != "mock" {
		t.Fatalf("provider mock: %v %v", p, ok)
	}
	if _, ok := p.(*Mock); !ok {
		t.Errorf("provider mock is %T", p)
	}
	if MustBuiltin().Default().Ref != "mock/scripted" {
		t.Error("MustBuiltin")
	}
	// Handing out a model never lets a caller change the catalog.
	m, _ := c.Lookup("mock/scripted")
	*m.ContextWindow = 1
	m.Pricing.Currency = "EUR"
	if again, _ := c.Lookup("mock/scripted"); *again.ContextWindow != 200000 || again.Pricing.Currency != "USD" {
		t.Error("the catalog changed through a returned model")
	}
}

func TestResolveAndCheckWords(t *testing.T) {
	t.Parallel()
	c := MustBuiltin()
	if m, err := c.Resolve("mock/text-only"); err != nil || m.Name != "text-only" {
		t.Fatalf("Resolve: %+v %v", m, err)
	}
	cases := []struct {
		ref       string
		withTools bool
		code      string
		sentinel  error
	}{
		{"mock/nope", false, "unknown_model", ErrUnknownModel},
		{"Mock/scripted", true, "unknown_model", ErrUnknownModel},
		{"", false, "unknown_model", ErrUnknownModel},
	}
	for _, cs := range cases {
		_, err := c.Check(cs.ref, cs.withTools)
		r, ok := refusal.As(err)
		if !ok || r.Code != cs.code || r.Kind != refusal.Unprocessable || !errors.Is(err, cs.sentinel) {
			t.Errorf("Check(%q): got %v", cs.ref, err)
		}
		if _, err := c.Resolve(cs.ref); !errors.Is(err, ErrUnknownModel) {
			t.Errorf("Resolve(%q): got %v", cs.ref, err)
		}
	}

	// A model without tools: fine without tools, model_capability_unavailable with them.
	noTools, err := NewCatalog(&Config{Providers: []ProviderConfig{{Name: "mock", Type: "mock"}},
		Models: []Model{{Ref: "mock/plain", Provider: "mock", Name: "plain"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noTools.Check("mock/plain", false); err != nil {
		t.Errorf("without tools: %v", err)
	}
	_, err = noTools.Check("mock/plain", true)
	r, ok := refusal.As(err)
	if !ok || r.Code != "model_capability_unavailable" || r.Kind != refusal.Unprocessable || !errors.Is(err, ErrModelCapabilityUnavailable) {
		t.Errorf("with tools: got %v", err)
	}
	if _, err := c.Check("mock/text-only", true); err != nil {
		t.Errorf("text-only has tools: %v", err)
	}
	if CodeUnknownModel != "unknown_model" || CodeModelCapabilityUnavailable != "model_capability_unavailable" {
		t.Error("a check word changed")
	}
}

func TestAcceptsMedia(t *testing.T) {
	t.Parallel()
	c := MustBuiltin()
	scripted, _ := c.Lookup("mock/scripted")
	textOnly, _ := c.Lookup("mock/text-only")
	for _, mt := range []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"} {
		if !scripted.AcceptsMedia(mt) {
			t.Errorf("scripted refuses %s", mt)
		}
		if textOnly.AcceptsMedia(mt) {
			t.Errorf("text-only accepts %s", mt)
		}
	}
	for _, mt := range []string{"text/plain", "image/svg+xml", "image/png; charset=x", ""} {
		if scripted.AcceptsMedia(mt) {
			t.Errorf("scripted accepts %q", mt)
		}
	}
	pdfOnly := Model{Capabilities: Capabilities{PDF: true}}
	if pdfOnly.AcceptsMedia("image/png") || !pdfOnly.AcceptsMedia("application/pdf") {
		t.Error("pdf without vision")
	}
}

func TestCatalogDefaults(t *testing.T) {
	t.Parallel()
	mock := []ProviderConfig{{Name: "mock", Type: "mock"}}
	c, err := NewCatalog(&Config{Providers: mock, Models: []Model{
		{Ref: "mock/zeta", Provider: "mock", Name: "zeta"},
		{Ref: "mock/alpha", DisplayName: "Alpha"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Default().Ref; got != "mock/zeta" {
		t.Errorf("default without default_model = %q, want the first configured model", got)
	}
	ms := c.Models()
	if ms[0].Provider != "mock" || ms[0].Name != "alpha" {
		t.Errorf("provider and name not taken from the ref: %+v", ms[0])
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Ref)
	}
	// Sorted by ref, the built-in mock models beside the configured ones.
	if want := []string{"mock/alpha", "mock/scripted", "mock/text-only", "mock/zeta"}; !slices.Equal(got, want) {
		t.Errorf("models %v, want %v", got, want)
	}
	if ms[3].DisplayName != "mock/zeta" {
		t.Errorf("display name defaults to the ref, got %q", ms[3].DisplayName)
	}
	// The built-in catalog with a default_model of its own, and next to a declared provider.
	c, err = NewCatalog(&Config{DefaultModel: "mock/text-only", Providers: []ProviderConfig{{Name: "lab", Type: "mock"}}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Default().Ref != "mock/text-only" {
		t.Errorf("default %q", c.Default().Ref)
	}
	if _, ok := c.Provider("lab"); !ok {
		t.Error("declared provider lab missing")
	}
	if p, ok := c.Provider("mock"); !ok || p.Name() != "mock" {
		t.Error("built-in provider mock missing")
	}
}

func TestCatalogValidation(t *testing.T) {
	t.Parallel()
	mock := []ProviderConfig{{Name: "mock", Type: "mock"}}
	m := func(ref string) Model {
		p, n, _ := strings.Cut(ref, "/")
		return Model{Ref: ref, Provider: p, Name: n}
	}
	withCaps := func(ref string, cw, mo int64) Model {
		x := m(ref)
		x.ContextWindow, x.MaxOutputTokens = &cw, &mo
		return x
	}
	priced := func(in, out, cur string) Model {
		x := m("mock/p")
		x.Pricing = &Pricing{InputPerMTok: in, OutputPerMTok: out, Currency: cur}
		return x
	}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"reserved openai-responses", Config{Providers: []ProviderConfig{{Name: "oa", Type: "openai-responses"}}},
			`model_provider "oa": type "openai-responses" is reserved for a later version; this version ships "mock", "openai" and "anthropic"`},
		{"openai without its adapter", Config{Providers: []ProviderConfig{{Name: "oa", Type: "openai"}}},
			`model_provider "oa": no adapter for type "openai" is built into this program`},
		{"openai model without sizes", Config{Providers: []ProviderConfig{{Name: "oa", Type: "openai"}}, Models: []Model{{Ref: "oa/gpt", Provider: "oa", Name: "gpt"}}},
			`model "oa/gpt": a model of an openai provider needs capabilities.context_window and capabilities.max_output_tokens`},
		{"native deferral on openai", Config{Providers: []ProviderConfig{{Name: "oa", Type: "openai", ToolDeferral: "native"}}},
			`model_provider "oa": tool_deferral "native" is for anthropic providers only`},
		{"unknown type", Config{Providers: []ProviderConfig{{Name: "x", Type: "llama"}}}, `model_provider "x": unknown type "llama"; this version ships "mock", "openai" and "anthropic"`},
		{"empty type", Config{Providers: []ProviderConfig{{Name: "x", Type: ""}}}, `model_provider "x": unknown type ""`},
		{"provider name grammar", Config{Providers: []ProviderConfig{{Name: "Mock", Type: "mock"}}}, `model_provider "Mock": the name must match`},
		{"provider twice", Config{Providers: []ProviderConfig{{Name: "mock", Type: "mock"}, {Name: "mock", Type: "mock"}}}, `model_provider "mock" is declared twice`},
		{"ref without slash", Config{Providers: mock, Models: []Model{{Ref: "mock", Provider: "mock"}}}, `model "mock": a ref is provider/model`},
		{"ref with capital provider", Config{Providers: mock, Models: []Model{m("Mock/x")}}, `model "Mock/x": a ref is provider/model`},
		{"ref with two slashes", Config{Providers: mock, Models: []Model{m("mock/a/b")}}, `model "mock/a/b": a ref is provider/model`},
		{"ref name starting with a dot", Config{Providers: mock, Models: []Model{m("mock/.x")}}, `model "mock/.x": a ref is provider/model`},
		{"provider not declared", Config{Providers: mock, Models: []Model{m("other/x")}}, `model "other/x": its provider "other" has no model_provider block`},
		{"fields that do not spell the ref", Config{Providers: mock, Models: []Model{{Ref: "mock/a", Provider: "mock", Name: "b"}}},
			`model "mock/a": provider "mock" and name "b" do not spell the ref`},
		{"model twice", Config{Providers: mock, Models: []Model{m("mock/a"), m("mock/a")}}, `model "mock/a" is declared twice`},
		{"blank display name", Config{Providers: mock, Models: []Model{{Ref: "mock/a", Provider: "mock", Name: "a", DisplayName: "  "}}},
			`model "mock/a": display_name is empty`},
		{"context window zero", Config{Providers: mock, Models: []Model{withCaps("mock/a", 0, 1)}}, `model "mock/a": context_window must be at least 1`},
		{"max output zero", Config{Providers: mock, Models: []Model{withCaps("mock/a", 10, 0)}}, `model "mock/a": max_output_tokens must be at least 1`},
		{"max output fills the window", Config{Providers: mock, Models: []Model{withCaps("mock/a", 8192, 8192)}},
			`model "mock/a": max_output_tokens (8192) must be less than context_window (8192)`},
		{"negative price", Config{Providers: mock, Models: []Model{priced("-1", "0", "USD")}}, `model "mock/p": pricing input_per_mtok "-1" is not a non-negative decimal number`},
		{"exponent price", Config{Providers: mock, Models: []Model{priced("0", "1e3", "USD")}}, `model "mock/p": pricing output_per_mtok "1e3" is not a non-negative decimal number`},
		{"empty price", Config{Providers: mock, Models: []Model{priced("", "0", "USD")}}, `pricing input_per_mtok "" is not a non-negative decimal number`},
		{"lower-case currency", Config{Providers: mock, Models: []Model{priced("0", "0", "usd")}}, `model "mock/p": pricing currency "usd" is not an ISO 4217 code`},
		{"unknown default", Config{DefaultModel: "mock/gone", Providers: mock, Models: []Model{m("mock/a")}}, `default_model "mock/gone" names no model block`},
		{"default outside the built-in catalog", Config{DefaultModel: "mock/gone"}, `default_model "mock/gone" is not in the built-in catalog`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewCatalog(&c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant it to contain %s", err, c.want)
			}
		})
	}
}

func TestCatalogReportsEveryProblemOnce(t *testing.T) {
	t.Parallel()
	_, err := NewCatalog(&Config{
		Providers: []ProviderConfig{{Name: "oa", Type: "openai-responses"}, {Name: "mock", Type: "mock"}},
		Models:    []Model{{Ref: "oa/gpt", Provider: "oa", Name: "gpt"}, {Ref: "mock/a", Provider: "mock", Name: "a", DisplayName: " "}},
	})
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{
		`model_provider "oa": type "openai-responses" is reserved for a later version; this version ships "mock", "openai" and "anthropic"`,
		`model "mock/a": display_name is empty`,
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("a refused provider's models are not reported again (-want +got)\n%s", diff)
	}
}

// TestBuiltinMockBesideModelBlocks (docs/operations.md#the-models-catalog): a model block keeps
// the built-in mock models in the catalog, but the default is a configured model, unless
// default_model names the mock; builtin_mock_models = false leaves them out, and alone leaves no
// model; a model block of a built-in ref replaces it; a provider named mock of another type
// cannot hold them.
func TestBuiltinMockBesideModelBlocks(t *testing.T) {
	t.Parallel()
	off := false
	lab := []ProviderConfig{{Name: "lab", Type: "mock"}}
	refsOf := func(c *Catalog) []string {
		var out []string
		for _, m := range c.Models() {
			out = append(out, m.Ref)
		}
		return out
	}
	c, err := NewCatalog(&Config{Providers: lab, Models: []Model{{Ref: "lab/x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := refsOf(c); !slices.Equal(got, []string{"lab/x", "mock/scripted", "mock/text-only"}) || c.Default().Ref != "lab/x" {
		t.Errorf("with a model block: %v, default %s", got, c.Default().Ref)
	}
	if _, err := c.Resolve("mock/scripted"); err != nil {
		t.Errorf("mock/scripted beside a model block: %v", err)
	}
	c, err = NewCatalog(&Config{DefaultModel: "mock/scripted", Providers: lab, Models: []Model{{Ref: "lab/x"}}})
	if err != nil || c.Default().Ref != "mock/scripted" {
		t.Errorf("default_model naming the mock: %v", err)
	}
	c, err = NewCatalog(&Config{BuiltinMockModels: &off, Providers: lab, Models: []Model{{Ref: "lab/x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := refsOf(c); !slices.Equal(got, []string{"lab/x"}) {
		t.Errorf("builtin_mock_models = false: %v", got)
	}
	if _, err := c.Resolve("mock/scripted"); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("mock/scripted with builtin_mock_models = false: %v", err)
	}
	if _, ok := c.Provider("mock"); ok {
		t.Error("the mock provider stays without its models")
	}
	c, err = NewCatalog(&Config{Providers: []ProviderConfig{{Name: "mock", Type: "mock"}}, Models: []Model{{Ref: "mock/scripted", DisplayName: "Mine"}}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.Resolve("mock/scripted"); err != nil || m.DisplayName != "Mine" || len(c.Models()) != 2 {
		t.Errorf("a block of a built-in ref: %+v %v, %d models", m, err, len(c.Models()))
	}
	for name, cfg := range map[string]Config{
		"no model at all": {BuiltinMockModels: &off},
		"mock of another type": {Providers: []ProviderConfig{{Name: "mock", Type: "anthropic"}},
			Models: []Model{{Ref: "mock/claude", Capabilities: Capabilities{ContextWindow: size(1000), MaxOutputTokens: size(10)}}}},
	} {
		_, err := NewCatalog(&cfg)
		want := map[string]string{
			"no model at all":      "builtin_mock_models = false leaves the catalog without a model; add a model block",
			"mock of another type": `model_provider "mock" is of type "anthropic", and the built-in mock models (mock/scripted, mock/text-only) need that name for the mock: rename the block, or set builtin_mock_models = false`,
		}[name]
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", name, err, want)
		}
	}
}
