package profiles

import (
	"context"
	"database/sql"
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
	rep, err := s.report(ctx, agent, p)
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
		if p.pinImports {
			pins := rep.Pins
			if !p.repin {
				kept, err := keepRecorded(ctx, tx, agent.ID, pins)
				if err != nil {
					return err
				}
				pins = kept
			}
			b, err := encode(nonNilPins(pins))
			if err != nil {
				return err
			}
			row.ImportPins = sql.NullString{String: string(b), Valid: true}
		}
		return store.PutAgentProfile(ctx, tx, row)
	})
	if err != nil {
		return nil, err
	}
	out, err := configurationOf(row)
	if err != nil {
		return nil, err
	}
	out.Problems = nonNilProblems(rep.Problems)
	return out, nil
}

// report accepts the proposal as new work would, without a selection, reporting rather than
// refusing (docs/api.md#agent-profiles): what its tool-provider imports and bare names would meet
// now, and the definitions a pinning write records. A proposal that reads no provider reports
// nothing. Another refusal of the acceptance (the bound of the assembled set) is reported too:
// the profile is stored and acceptance refuses it later.
func (s *Service) report(ctx context.Context, agent Agent, p *proposal) (*declare.Frozen, error) {
	im := p.imports
	a := declare.Acceptance{Explicit: p.tools, Imports: &im, Report: true}
	if !a.NeedsProviders() {
		return &declare.Frozen{}, nil
	}
	q := s.store.Reader()
	var err error
	if a.Providers, err = Providers(ctx, q, agent.WorkspaceID); err != nil {
		return nil, err
	}
	f, err := s.compiler.Accept(a)
	if err != nil {
		problem, ok := declare.ProblemOf(err)
		if !ok {
			return nil, err
		}
		return &declare.Frozen{Problems: []declare.ImportProblem{problem}}, nil
	}
	return f, nil
}

// keepRecorded is a pinning write without repin: a name already pinned keeps its recorded
// definition, read in the write's transaction; a name newly matched is pinned as announced now.
func keepRecorded(ctx context.Context, tx *store.Tx, agentID int64, current []declare.Pin) ([]declare.Pin, error) {
	row, err := store.AgentProfileOf(ctx, tx, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return current, nil
	}
	if err != nil {
		return nil, err
	}
	old, err := pinsOf(row)
	if err != nil || len(old) == 0 {
		return current, err
	}
	recorded := make(map[string]declare.Pin, len(old))
	for _, pin := range old {
		recorded[pin.Name] = pin
	}
	out := make([]declare.Pin, len(current))
	for i, pin := range current {
		if r, ok := recorded[pin.Name]; ok {
			pin = r
		}
		out[i] = pin
	}
	return out, nil
}

func nonNilPins(p []declare.Pin) []declare.Pin {
	if p == nil {
		return []declare.Pin{}
	}
	return p
}

func nonNilProblems(p []declare.ImportProblem) []declare.ImportProblem {
	if p == nil {
		return []declare.ImportProblem{}
	}
	return p
}
