package profiles

import (
	"context"
	"errors"
	"time"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Models is what the profile door reads of the models catalog; *model.Catalog satisfies it.
type Models interface {
	Lookup(ref string) (model.Model, bool)
}

var _ Models = (*model.Catalog)(nil)

// Options are the Service's dependencies.
type Options struct {
	Store    *store.Store
	Compiler *declare.Compiler
	Models   Models
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Service reads, replaces and assembles agent profiles. It is safe for concurrent use.
type Service struct {
	store    *store.Store
	compiler *declare.Compiler
	models   Models
	now      func() time.Time
}

// New returns a Service; Store, Compiler and Models are required.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Compiler == nil || o.Models == nil {
		return nil, errors.New("profiles: Options.Store, Compiler and Models are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{store: o.Store, compiler: o.Compiler, models: o.Models, now: o.Now}, nil
}

// Agent names the agent whose profile a door reads or replaces: the authenticated caller at the
// agent's own door, the agent a person names at the member door.
type Agent struct {
	ID          int64
	WorkspaceID int64
	// Guard, when set, is the caller's authority over the agent, read again inside the
	// replacement's transaction before anything is written (a steward or an owner at the member
	// door, docs/api.md#an-agents-profile-and-tokens); its refusal rolls the replacement back
	// and is returned unchanged. Reads and assemblies do not call it.
	Guard func(ctx context.Context, tx *store.Tx) error
}

// Configuration reads the agent's profile in the door's read-back form; before the first
// replacement it is the empty profile.
func (s *Service) Configuration(ctx context.Context, agent Agent) (*Configuration, error) {
	row, err := store.AgentProfileOf(ctx, s.store.Reader(), agent.ID)
	if errors.Is(err, store.ErrNotFound) {
		return emptyConfiguration(), nil
	}
	if err != nil {
		return nil, err
	}
	return configurationOf(row)
}

// PutConfiguration replaces the agent's profile whole with cfg, the request's configuration
// object: a field it omits is cleared, unknown fields are ignored (the door refuses them before
// it calls). The fields are validated in the door's order and the first failure is returned as
// a refusal rooted at the declaration (the caller's door re-roots it) with nothing stored.
// Replacements of one agent are serialized; each one that is stored gets the next revision. It
// returns the stored profile's read-back.
func (s *Service) PutConfiguration(ctx context.Context, agent Agent, cfg jsonwire.Value) (*Configuration, error) {
	if !cfg.IsObject() {
		return nil, errors.New("profiles: the configuration is not a JSON object")
	}
	p, err := s.validate(cfg)
	if err != nil {
		return nil, err
	}
	row := p.row(agent.ID, store.Millis(s.now()))
	err = s.store.Write(ctx, func(tx *store.Tx) error {
		if agent.Guard != nil {
			if err := agent.Guard(ctx, tx); err != nil {
				return err
			}
		}
		return store.PutAgentProfile(ctx, tx, row)
	})
	if err != nil {
		return nil, err
	}
	return configurationOf(row)
}
