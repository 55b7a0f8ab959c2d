package openai

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// Options are what the adapter needs besides its blocks.
type Options struct {
	// Client replaces the client wire.NewClient builds (tests).
	Client *http.Client
	// Log receives one line per attempt; nil discards them.
	Log hclog.Logger
	// Now is the clock Retry-After dates are read against; nil means time.Now.
	Now func() time.Time
	// Version is the program version in the User-Agent header (nexus/VERSION).
	Version string
}

// Adapter is the catalog's builder of openai providers.
func Adapter(opts Options) model.Adapter {
	return func(p model.ProviderConfig, models []model.Model) (model.Provider, error) {
		return New(p, models, opts)
	}
}

// New builds the provider of one resolved model_provider block of type openai and its models.
func New(p model.ProviderConfig, models []model.Model, opts Options) (*Provider, error) {
	p = p.Resolved()
	client := opts.Client
	if client == nil {
		var err error
		if client, err = wire.NewClient(p); err != nil {
			return nil, err
		}
	}
	log := opts.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if wire.InsecureKey(p) {
		log.Warn("model provider sends its key over plain http to a host that is not this machine", "provider", p.Name)
	}
	byRef := map[string]model.Model{}
	for _, m := range models {
		byRef[m.Ref] = m
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	return &Provider{cfg: p, models: byRef, client: client, log: log, now: now, scrub: wire.NewScrubber(p.Secrets()),
		url: p.BaseURL + "/chat/completions", userAgent: "nexus/" + version}, nil
}

// Provider is one openai provider block. Safe for concurrent use.
type Provider struct {
	cfg       model.ProviderConfig
	models    map[string]model.Model
	client    *http.Client
	log       hclog.Logger
	now       func() time.Time
	scrub     wire.Scrubber
	url       string
	userAgent string
}

var (
	_ model.Provider      = (*Provider)(nil)
	_ model.RetryPolicied = (*Provider)(nil)
)

// Name is the provider block's label.
func (p *Provider) Name() string { return p.cfg.Name }

// RetryPolicy is the block's max_attempts and retry_max_wait.
func (p *Provider) RetryPolicy() model.RetryPolicy {
	return model.RetryPolicy{MaxAttempts: p.cfg.MaxAttempts, MaxWait: *p.cfg.RetryMaxWait}
}

func (p *Provider) header() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if p.cfg.Streams() {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if p.cfg.APIKey.IsSet() {
		h.Set("Authorization", "Bearer "+p.cfg.APIKey.Reveal())
	}
	if p.cfg.Organization != "" {
		h.Set("OpenAI-Organization", p.cfg.Organization)
	}
	if p.cfg.Project != "" {
		h.Set("OpenAI-Project", p.cfg.Project)
	}
	h.Set("User-Agent", p.userAgent)
	for _, x := range p.cfg.Headers {
		h.Set(x.Name, x.Value.Reveal())
	}
	return h
}
