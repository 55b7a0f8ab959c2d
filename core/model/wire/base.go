package wire

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
)

// Options are what an adapter needs besides its blocks.
type Options struct {
	// Client replaces the client NewClient builds (tests).
	Client *http.Client
	// Log receives one line per attempt; nil discards them.
	Log hclog.Logger
	// Now is the clock Retry-After dates are read against; nil means time.Now.
	Now func() time.Time
	// Version is the program version in the User-Agent header (nexus/VERSION).
	Version string
}

// Base is what every adapter's provider holds: its resolved block and models, its client,
// logger, clock and scrubber, its endpoint and User-Agent.
type Base struct {
	Cfg       model.ProviderConfig
	Models    map[string]model.Model
	Client    *http.Client
	Log       hclog.Logger
	Now       func() time.Time
	Scrub     Scrubber
	URL       string
	UserAgent string
}

// NewBase resolves a provider block and builds its client; path is the endpoint under base_url.
// A key that would cross the network over plain http is warned about.
func NewBase(p model.ProviderConfig, models []model.Model, opts Options, path string) (Base, error) {
	p = p.Resolved()
	client := opts.Client
	if client == nil {
		var err error
		if client, err = NewClient(p); err != nil {
			return Base{}, err
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
	if InsecureKey(p) {
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
	return Base{Cfg: p, Models: byRef, Client: client, Log: log, Now: now, Scrub: NewScrubber(p.Secrets()),
		URL: p.BaseURL + path, UserAgent: "nexus/" + version}, nil
}

// Name is the provider block's label.
func (b *Base) Name() string { return b.Cfg.Name }

// RetryPolicy is the block's max_attempts and retry_max_wait.
func (b *Base) RetryPolicy() model.RetryPolicy {
	return model.RetryPolicy{MaxAttempts: b.Cfg.MaxAttempts, MaxWait: *b.Cfg.RetryMaxWait}
}

// Idle is the attempt's idle timeout: idle_timeout when streaming, none otherwise.
func (b *Base) Idle() time.Duration {
	if b.Cfg.Streams() {
		return *b.Cfg.IdleTimeout
	}
	return 0
}

// Accept is the Accept header's value.
func (b *Base) Accept() string {
	if b.Cfg.Streams() {
		return "text/event-stream"
	}
	return "application/json"
}

// Extra sets the configured headers.
func (b *Base) Extra(h http.Header) {
	for _, x := range b.Cfg.Headers {
		h.Set(x.Name, x.Value.Reveal())
	}
}

// LogFields label an attempt's log line.
func (b *Base) LogFields(req *model.Request) []any {
	return []any{"provider", b.Cfg.Name, "ref", req.Ref, "run", req.Run, "task", req.TaskKey}
}

// Sender is an adapter that builds its body once (Prepare) and sends it per attempt (Send).
type Sender interface {
	Prepare(ctx context.Context, req *model.Request) (any, error)
	Send(ctx context.Context, req *model.Request, prepared any) (*model.Response, error)
}

// Complete is one model call without the retry decorator: Prepare, then Send.
func Complete(ctx context.Context, s Sender, req *model.Request) (*model.Response, error) {
	prepared, err := s.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.Send(ctx, req, prepared)
}

// Prepared is what an adapter's Prepare returns for its encoder's result: a failure while ctx
// is cancelled (an attachment read cut short) is the cancellation.
func Prepared(ctx context.Context, encoded any, err error) (any, error) {
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return encoded, nil
}

// AdapterOf is the catalog's builder of an adapter whose endpoint is path under base_url; wrap
// makes the adapter's provider of its Base.
func AdapterOf(path string, opts Options, wrap func(Base) model.Provider) model.Adapter {
	return func(p model.ProviderConfig, models []model.Model) (model.Provider, error) {
		b, err := NewBase(p, models, opts, path)
		if err != nil {
			return nil, err
		}
		return wrap(b), nil
	}
}

// CheckTools refuses, before anything is sent, an offered tool whose name breaks the wire rule or
// whose strict schema the model would not honour.
func CheckTools(req *model.Request, m model.Model) error {
	for _, t := range req.Tools {
		if !ValidToolName(t.Name) {
			return ToolNameError(t.Name)
		}
		if t.Strict != nil && *t.Strict && !m.StrictTools {
			return &model.Error{Key: model.KeyModelCapabilityUnavailable,
				Detail: fmt.Sprintf("tool %q asks for strict tool use, which this model does not support", t.Name)}
		}
	}
	return nil
}
