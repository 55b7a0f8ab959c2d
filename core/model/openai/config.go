package openai

import (
	"net/http"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// Options are what the adapter needs besides its blocks.
type Options = wire.Options

// Adapter is the catalog's builder of openai providers.
func Adapter(opts Options) model.Adapter {
	return func(p model.ProviderConfig, models []model.Model) (model.Provider, error) {
		return New(p, models, opts)
	}
}

// New builds the provider of one model_provider block of type openai and its models.
func New(p model.ProviderConfig, models []model.Model, opts Options) (*Provider, error) {
	b, err := wire.NewBase(p, models, opts, "/chat/completions")
	if err != nil {
		return nil, err
	}
	return &Provider{Base: b}, nil
}

// Provider is one openai provider block. Safe for concurrent use.
type Provider struct{ wire.Base }

// Capabilities reports what the openai wire needs of the engine (docs/providers.md, what a
// provider reports): its usage counts cached prompt tokens, and it takes replayed calls without
// definitions.
func (p *Provider) Capabilities() model.ProviderCapabilities {
	return model.ProviderCapabilities{CacheUsage: true}
}

var (
	_ model.Provider      = (*Provider)(nil)
	_ model.RetryPolicied = (*Provider)(nil)
	_ model.Preparer      = (*Provider)(nil)
)

func (p *Provider) header() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", p.Accept())
	if p.Cfg.APIKey.IsSet() {
		h.Set("Authorization", "Bearer "+p.Cfg.APIKey.Reveal())
	}
	if p.Cfg.Organization != "" {
		h.Set("OpenAI-Organization", p.Cfg.Organization)
	}
	if p.Cfg.Project != "" {
		h.Set("OpenAI-Project", p.Cfg.Project)
	}
	h.Set("User-Agent", p.UserAgent)
	p.Extra(h)
	return h
}
