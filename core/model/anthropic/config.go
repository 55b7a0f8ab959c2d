package anthropic

import (
	"net/http"
	"strings"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// Options are what the adapter needs besides its blocks.
type Options = wire.Options

// Adapter is the catalog's builder of anthropic providers.
func Adapter(opts Options) model.Adapter {
	return func(p model.ProviderConfig, models []model.Model) (model.Provider, error) {
		return New(p, models, opts)
	}
}

// New builds the provider of one model_provider block of type anthropic and its models.
func New(p model.ProviderConfig, models []model.Model, opts Options) (*Provider, error) {
	b, err := wire.NewBase(p, models, opts, "/v1/messages")
	if err != nil {
		return nil, err
	}
	return &Provider{Base: b}, nil
}

// Provider is one anthropic provider block. Safe for concurrent use.
type Provider struct{ wire.Base }

// Capabilities reports what the anthropic wire needs of the engine (docs/providers.md, what a
// provider reports): its usage counts cache reads and writes, and the Messages API refuses
// tool_use blocks in a request that defines no tools.
func (p *Provider) Capabilities() model.ProviderCapabilities {
	return model.ProviderCapabilities{CacheUsage: true, CallsNeedDefinitions: true}
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
		h.Set("x-api-key", p.Cfg.APIKey.Reveal())
	}
	h.Set("anthropic-version", p.Cfg.AnthropicVersion)
	if len(p.Cfg.Betas) > 0 {
		h.Set("anthropic-beta", strings.Join(p.Cfg.Betas, ","))
	}
	h.Set("User-Agent", p.UserAgent)
	p.Extra(h)
	return h
}
