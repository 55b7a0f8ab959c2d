package model

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
)

// The model check's words (docs/operations.md#the-models-catalog,
// docs/agent-tools.md#what-a-model-reads). Run doors answer them as 422 at the request's model
// path; delegate_task, spawn and send quote them as the reason of model_not_authorized; a model
// task fails with model_capability_unavailable when its provider cannot honour the request.
const (
	CodeUnknownModel               = "unknown_model"
	CodeModelCapabilityUnavailable = "model_capability_unavailable"
)

// ErrUnknownModel and ErrModelCapabilityUnavailable match, with errors.Is, every refusal Resolve
// and Check return for their word.
var (
	ErrUnknownModel               = refusal.New(refusal.Unprocessable, CodeUnknownModel, "The models catalog has no such model.")
	ErrModelCapabilityUnavailable = refusal.New(refusal.Unprocessable, CodeModelCapabilityUnavailable, "The model lacks a capability the work needs.")
)

// The built-in mock models (docs/operations.md#the-models-catalog): the whole catalog when no model
// block is configured, and beside the configured models unless builtin_mock_models = false.
const (
	BuiltinProvider      = "mock"
	DefaultModelRef      = "mock/scripted"
	TextOnlyModelRef     = "mock/text-only"
	builtinCurrency      = "USD"
	builtinContextWindow = 200000 // docs/operations.md#the-models-catalog: both built-in models
	builtinMaxOutput     = 8192   // docs/operations.md#the-models-catalog: both built-in models
)

var (
	// refPattern is the ref grammar (docs/operations.md#the-models-catalog): provider/model.
	refPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.:-]*$`)
	// providerPattern is the provider part of the ref grammar, which a model_provider label
	// must match so that a model can name it.
	providerPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
	// currencyPattern is the shape of an ISO 4217 alphabetic code.
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
)

// Capabilities are what a model can take and give. A nil size means the configuration does not
// state it (served as null).
type Capabilities struct {
	Tools, Vision, PDF, Reasoning bool
	// StrictTools: the model honours strict: true tool schemas. Not served by models_list.
	StrictTools     bool
	ContextWindow   *int64
	MaxOutputTokens *int64
}

// Pricing is a model's price per million tokens. Prices are non-negative decimals written as
// JSON numbers ("0", "2.5", "0.3"), kept exactly as configured so that cost is computed on the
// configured decimal and served as it was written.
type Pricing struct {
	InputPerMTok  string
	OutputPerMTok string
	// CachedInputPerMTok and CacheWritePerMTok price tokens read from and written to a prompt
	// cache; "" means input_per_mtok. Not served by models_list.
	CachedInputPerMTok string
	CacheWritePerMTok  string
	Currency           string // ISO 4217 code
}

// Model is one catalog entry.
type Model struct {
	Ref         string // "mock/scripted"
	Provider    string // "mock": the model_provider block it runs on
	Name        string // "scripted": the name part of the ref
	DisplayName string
	Capabilities
	Pricing *Pricing // nil: no price configured, no cost computed

	// ID is the model id sent on the wire; "" means Name. The operator facts below are not
	// served by models_list.
	ID string
	// ReasoningDefault is the model's one reasoning setting (its reasoning block), which every
	// request to it records; nil when it has none.
	ReasoningDefault *Reasoning
	// Media lowers (or raises) the type's media limits; nil fields take the type's defaults.
	Media *MediaLimits
	// ExtraBody is merged into the top level of every wire request body, keys in byte order.
	ExtraBody []ExtraField

	// ProviderType is the type of the model's provider block, filled when the catalog is built.
	ProviderType string
	// NativeSearch is the tool search variant of the provider's native deferral, "" in kernel
	// mode; filled when the catalog is built.
	NativeSearch string
}

// ExtraField is one extra_body key and its JSON value.
type ExtraField struct {
	Key   string
	Value []byte
}

// WireID is the model id the provider knows.
func (m Model) WireID() string {
	if m.ID != "" {
		return m.ID
	}
	return m.Name
}

// AcceptsMedia reports whether the model reads an attachment of this detected media type
// (docs/agent-tools.md#what-a-model-reads): images with vision, PDF with pdf.
func (m Model) AcceptsMedia(mediaType string) bool {
	switch mediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return m.Vision
	case "application/pdf":
		return m.PDF
	}
	return false
}

func (m Model) clone() Model {
	c := m
	if m.ContextWindow != nil {
		v := *m.ContextWindow
		c.ContextWindow = &v
	}
	if m.MaxOutputTokens != nil {
		v := *m.MaxOutputTokens
		c.MaxOutputTokens = &v
	}
	if m.Pricing != nil {
		p := *m.Pricing
		c.Pricing = &p
	}
	if m.ReasoningDefault != nil {
		r := *m.ReasoningDefault
		c.ReasoningDefault = &r
	}
	if m.Media != nil {
		l := *m.Media
		c.Media = &l
	}
	c.ExtraBody = slices.Clone(m.ExtraBody)
	return c
}

// Config is the models catalog as configured: what DecodeConfig reads from nexus.hcl, or what a
// test writes directly. The zero Config is the built-in catalog.
type Config struct {
	// DefaultModel is the deployment default_model. Empty: the first configured model, or
	// mock/scripted for the built-in catalog.
	DefaultModel string
	Providers    []ProviderConfig
	// Models in configuration order. None: the built-in catalog. A model whose Provider and
	// Name are both empty takes them from its Ref; one whose DisplayName is empty is displayed
	// under its ref.
	Models []Model
	// BuiltinMockModels is builtin_mock_models: nil or true keeps the built-in mock models
	// (mock/scripted, mock/text-only) beside the configured ones, a test double agent authors
	// use in their own CI; false leaves them out, for production. They are never the default
	// when a model block exists.
	BuiltinMockModels *bool
}

// BuiltinModels returns the built-in catalog's two models.
func BuiltinModels() []Model {
	size := func(v int64) *int64 { return &v }
	price := func() *Pricing { return &Pricing{InputPerMTok: "0", OutputPerMTok: "0", Currency: builtinCurrency} }
	return []Model{
		{Ref: DefaultModelRef, Provider: BuiltinProvider, Name: "scripted", DisplayName: "Mock (scripted)",
			Capabilities: Capabilities{Tools: true, Vision: true, PDF: true,
				ContextWindow: size(builtinContextWindow), MaxOutputTokens: size(builtinMaxOutput)},
			Pricing: price()},
		{Ref: TextOnlyModelRef, Provider: BuiltinProvider, Name: "text-only", DisplayName: "Mock (text only)",
			Capabilities: Capabilities{Tools: true,
				ContextWindow: size(builtinContextWindow), MaxOutputTokens: size(builtinMaxOutput)},
			Pricing: price()},
	}
}

// Catalog is the immutable models catalog with its provider instances. Safe for concurrent use.
type Catalog struct {
	models       []Model // sorted by ref
	byRef        map[string]int
	defaultModel string
	providers    map[string]Provider
	configs      map[string]ProviderConfig // resolved
}

// Adapter builds the provider instance of one model_provider block of its type, given the
// resolved block and the block's models (sorted by ref). core/server supplies one per real
// provider type, so that this package never imports the adapters.
type Adapter func(p ProviderConfig, models []Model) (Provider, error)

// configError is one configuration problem; which names the item it belongs to so that the HCL
// reader can point at the block, and attr the attribute when one is at fault.
type configError struct {
	which string // "provider", "model" or "default"
	index int
	attr  string
	msg   string
}

// NewCatalog validates a configuration and builds the catalog with the mock's providers only; a
// real provider type needs NewCatalogWith. A nil configuration (no catalog blocks in the file) is
// the built-in catalog.
func NewCatalog(cfg *Config) (*Catalog, error) { return NewCatalogWith(cfg, nil) }

// NewCatalogWith is NewCatalog with the adapters of the real provider types, keyed by type.
func NewCatalogWith(cfg *Config, adapters map[string]Adapter) (*Catalog, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c, problems := build(*cfg)
	if len(problems) == 0 {
		problems = c.instantiate(adapters)
	}
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = errors.New(p.msg)
		}
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// MustBuiltin returns the built-in catalog; it cannot fail.
func MustBuiltin() *Catalog {
	c, err := NewCatalog(nil)
	if err != nil {
		panic("model: the built-in catalog is invalid: " + err.Error())
	}
	return c
}

func build(cfg Config) (*Catalog, []configError) {
	var problems []configError
	add := func(which string, i int, format string, args ...any) {
		problems = append(problems, configError{which, i, "", fmt.Sprintf(format, args...)})
	}

	providers := map[string]ProviderConfig{}
	refused := map[string]bool{} // providers already reported, so their models are not reported again
	for i, p := range cfg.Providers {
		if attr, msg := checkProvider(p); msg != "" {
			problems = append(problems, configError{"provider", i, attr, msg})
			refused[p.Name] = true
			continue
		}
		if _, dup := providers[p.Name]; dup {
			add("provider", i, "model_provider %q is declared twice", p.Name)
			continue
		}
		providers[p.Name] = p
	}

	models := slices.Clone(cfg.Models)
	builtin := len(models) == 0
	withMock := cfg.BuiltinMockModels == nil || *cfg.BuiltinMockModels
	switch {
	case builtin && !withMock:
		add("builtin", 0, "builtin_mock_models = false leaves the catalog without a model; add a model block")
	case withMock:
		if p, ok := providers[BuiltinProvider]; ok && p.Type != ProviderTypeMock {
			i := slices.IndexFunc(cfg.Providers, func(p ProviderConfig) bool { return p.Name == BuiltinProvider })
			add("provider", i, "model_provider %q is of type %q, and the built-in mock models (%s, %s) need that name for the mock: rename the block, or set builtin_mock_models = false",
				BuiltinProvider, p.Type, DefaultModelRef, TextOnlyModelRef)
			break
		}
		if _, ok := providers[BuiltinProvider]; !ok {
			providers[BuiltinProvider] = ProviderConfig{Name: BuiltinProvider, Type: ProviderTypeMock}
		}
		for _, m := range BuiltinModels() {
			// A model block of the same ref replaces the built-in model.
			if !slices.ContainsFunc(cfg.Models, func(c Model) bool { return c.Ref == m.Ref }) {
				models = append(models, m)
			}
		}
	}

	c := &Catalog{byRef: map[string]int{}, providers: map[string]Provider{}}
	for i, m := range models {
		m = m.clone()
		if m.Provider == "" && m.Name == "" {
			m.Provider, m.Name, _ = strings.Cut(m.Ref, "/")
		}
		if m.DisplayName == "" {
			m.DisplayName = m.Ref
		}
		if msg := checkModel(m); msg != "" {
			add("model", i, "%s", msg)
			continue
		}
		pc, ok := providers[m.Provider]
		if !ok {
			if refused[m.Provider] {
				continue
			}
			add("model", i, "model %q: its provider %q has no model_provider block", m.Ref, m.Provider)
			continue
		}
		m.ProviderType = pc.Type
		m.NativeSearch = pc.Resolved().NativeSearch()
		if attr, msg := checkModelForType(m); msg != "" {
			problems = append(problems, configError{"model", i, attr, msg})
			continue
		}
		if _, dup := c.byRef[m.Ref]; dup {
			add("model", i, "model %q is declared twice", m.Ref)
			continue
		}
		c.byRef[m.Ref] = len(c.models)
		c.models = append(c.models, m)
	}

	// The mock is the default only of the built-in catalog: with a model block the first one is.
	c.defaultModel = cfg.DefaultModel
	if c.defaultModel == "" {
		c.defaultModel = DefaultModelRef
		if !builtin {
			c.defaultModel = cfg.Models[0].Ref
		}
	}
	if _, ok := c.byRef[c.defaultModel]; !ok && len(problems) == 0 {
		if builtin {
			add("default", 0, "default_model %q is not in the built-in catalog (mock/scripted, mock/text-only); add a model block for it", c.defaultModel)
		} else {
			add("default", 0, "default_model %q names no model block", c.defaultModel)
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}

	slices.SortFunc(c.models, func(a, b Model) int { return strings.Compare(a.Ref, b.Ref) })
	for i, m := range c.models {
		c.byRef[m.Ref] = i
	}
	c.configs = map[string]ProviderConfig{}
	for name, p := range providers {
		c.configs[name] = p.Resolved()
	}
	return c, nil
}

// instantiate builds each provider block's instance: the mock here, the real types through
// their adapters.
func (c *Catalog) instantiate(adapters map[string]Adapter) []configError {
	var problems []configError
	names := make([]string, 0, len(c.configs))
	for name := range c.configs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := c.configs[name]
		if p.Type == ProviderTypeMock {
			c.providers[name] = NewMock(name)
			continue
		}
		build, ok := adapters[p.Type]
		if !ok {
			problems = append(problems, configError{which: "provider", msg: fmt.Sprintf("model_provider %q: no adapter for type %q is built into this program", name, p.Type)})
			continue
		}
		var models []Model
		for _, m := range c.models {
			if m.Provider == name {
				models = append(models, m.clone())
			}
		}
		inst, err := build(p, models)
		if err != nil {
			problems = append(problems, configError{which: "provider", msg: fmt.Sprintf("model_provider %q: %v", name, err)})
			continue
		}
		c.providers[name] = inst
	}
	return problems
}

// checkModel checks one model on its own. DisplayName is already defaulted.
func checkModel(m Model) string {
	if !refPattern.MatchString(m.Ref) {
		return fmt.Sprintf("model %q: a ref is provider/model matching [a-z0-9][a-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.:-]*", m.Ref)
	}
	provider, name, _ := strings.Cut(m.Ref, "/")
	if m.Provider != provider || m.Name != name {
		return fmt.Sprintf("model %q: provider %q and name %q do not spell the ref", m.Ref, m.Provider, m.Name)
	}
	if strings.TrimSpace(m.DisplayName) == "" {
		return fmt.Sprintf("model %q: display_name is empty", m.Ref)
	}
	if m.ContextWindow != nil && *m.ContextWindow < 1 {
		return fmt.Sprintf("model %q: context_window must be at least 1", m.Ref)
	}
	if m.MaxOutputTokens != nil && *m.MaxOutputTokens < 1 {
		return fmt.Sprintf("model %q: max_output_tokens must be at least 1", m.Ref)
	}
	if m.ContextWindow != nil && m.MaxOutputTokens != nil && *m.MaxOutputTokens >= *m.ContextWindow {
		// The history budget is context_window - max_output_tokens: nothing would fit.
		return fmt.Sprintf("model %q: max_output_tokens (%d) must be less than context_window (%d)", m.Ref, *m.MaxOutputTokens, *m.ContextWindow)
	}
	if p := m.Pricing; p != nil {
		for _, v := range []struct{ name, value string }{{"input_per_mtok", p.InputPerMTok}, {"output_per_mtok", p.OutputPerMTok},
			{"cached_input_per_mtok", p.CachedInputPerMTok}, {"cache_write_per_mtok", p.CacheWritePerMTok}} {
			if v.value == "" && (v.name == "cached_input_per_mtok" || v.name == "cache_write_per_mtok") {
				continue
			}
			if _, err := parsePrice(v.value); err != nil {
				return fmt.Sprintf("model %q: pricing %s %s", m.Ref, v.name, err)
			}
		}
		if !currencyPattern.MatchString(p.Currency) {
			return fmt.Sprintf("model %q: pricing currency %q is not an ISO 4217 code (three capital letters)", m.Ref, p.Currency)
		}
	}
	return ""
}

// decimalPattern is a JSON number without an exponent or sign: how a price is kept.
var decimalPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]+)?$`)

func parsePrice(s string) (*big.Rat, error) {
	if !decimalPattern.MatchString(s) {
		return nil, fmt.Errorf("%q is not a non-negative decimal number", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a non-negative decimal number", s)
	}
	return r, nil
}

// ValidRef reports whether ref has the form of a model ref, provider/model
// (docs/operations.md#the-models-catalog), whether or not the catalog holds it.
func ValidRef(ref string) bool { return refPattern.MatchString(ref) }

// Default returns the deployment's default model.
func (c *Catalog) Default() Model { return c.models[c.byRef[c.defaultModel]].clone() }

// Models returns every model, sorted by ref in byte order.
func (c *Catalog) Models() []Model {
	out := make([]Model, len(c.models))
	for i, m := range c.models {
		out[i] = m.clone()
	}
	return out
}

// Lookup returns the model with this ref.
func (c *Catalog) Lookup(ref string) (Model, bool) {
	i, ok := c.byRef[ref]
	if !ok {
		return Model{}, false
	}
	return c.models[i].clone(), true
}

// Resolve returns the model with this ref, or an unknown_model refusal (matching
// ErrUnknownModel) that a door completes with its path.
func (c *Catalog) Resolve(ref string) (Model, error) {
	m, ok := c.Lookup(ref)
	if !ok {
		return Model{}, refusal.Newf(refusal.Unprocessable, CodeUnknownModel,
			"The models catalog has no model %q; models_list and GET /agent_api/v1/models list the refs.", ref)
	}
	return m, nil
}

// Check resolves ref for work that does (withTools) or does not offer tools: unknown_model, or
// model_capability_unavailable for a model without the tools capability when tools are offered.
func (c *Catalog) Check(ref string, withTools bool) (Model, error) {
	m, err := c.Resolve(ref)
	if err != nil {
		return Model{}, err
	}
	if withTools && !m.Tools {
		return Model{}, refusal.Newf(refusal.Unprocessable, CodeModelCapabilityUnavailable,
			"The model %q cannot call tools, and this work declares tools.", ref)
	}
	return m, nil
}

// Provider returns the provider instance of a model_provider block (or the built-in mock).
func (c *Catalog) Provider(name string) (Provider, bool) {
	p, ok := c.providers[name]
	return p, ok
}

// ProviderConfig returns the resolved model_provider block of this name.
func (c *Catalog) ProviderConfig(name string) (ProviderConfig, bool) {
	p, ok := c.configs[name]
	return p, ok
}
