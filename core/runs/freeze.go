package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/store"
)

// What acceptance freezes onto new work (docs/agent-tools.md#declaring-tools): a model step's
// declaration, or the answering agent's profile for a conversation turn. core/declare owns every
// rule of the freeze and core/profiles the profile as it stands now; the engine reads, in the
// accepting transaction, the facts they name (the Runners, the kernel skill documents) and
// stores what they answer.

// FrozenDeclaration is what acceptance stores on the work (docs/agent-tools.md#declaring-tools).
type FrozenDeclaration struct {
	ToolDefinitions []byte
	Environment     []byte
	SkillCatalog    []byte
	// HasTools is false for an empty set (the model's tools capability is then not needed).
	HasTools bool
}

// frozenOf is a freeze as the work stores it.
func frozenOf(f *declare.Frozen) (*FrozenDeclaration, error) {
	env, err := f.Environment.MarshalJSON()
	if err != nil {
		return nil, err
	}
	cat, err := f.SkillCatalog.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return &FrozenDeclaration{ToolDefinitions: f.ToolDefinitions.Bytes(), Environment: env, SkillCatalog: cat,
		HasTools: f.ToolDefinitions.Len() > 0}, nil
}

// stepDeclaration is what an authored model step (or a tool step's model_defaults) declares.
type stepDeclaration struct {
	WorkspaceID int64
	// Sources are the step's raw fields; each nil when absent.
	Sources declare.StepSources
	// Selection is the run's default Runner, "" for none.
	Selection string
	// Path is the step's path, e.g. "steps[1].model".
	Path string
	// Skills are the facts a kernel skill callable's catalog is read against; nil reads none.
	Skills *skillFacts
}

// freezeStep freezes a model step's declaration in the accepting transaction, q. A refusal is
// the run door's, at a path under in.Path.
func (e *Engine) freezeStep(ctx context.Context, q store.Querier, in *stepDeclaration) (*FrozenDeclaration, error) {
	door := declare.RunDoor(in.Path + ".")
	a, err := e.compiler.Step(in.Sources)
	if err != nil {
		return nil, door.Refuse(err)
	}
	a.Selection = in.Selection
	if a.Runners, err = profiles.Runners(ctx, q, in.WorkspaceID, a.RunnerIDs()); err != nil {
		return nil, err
	}
	if a.NeedsProviders() {
		if a.Providers, err = profiles.Providers(ctx, q, in.WorkspaceID); err != nil {
			return nil, err
		}
	}
	if in.Skills != nil && declare.DeclaresKernelSkill(a.Explicit, a.Imports) {
		if a.KernelSkills, err = e.kernelSkills(ctx, q, in.Skills); err != nil {
			return nil, err
		}
	}
	f, err := e.compiler.Accept(a)
	if err != nil {
		return nil, door.Refuse(err)
	}
	return frozenOf(f)
}

// AcceptedProfile is an answering agent's profile frozen onto a turn.
type AcceptedProfile struct {
	Frozen        FrozenDeclaration
	Instructions  *string
	DefaultModel  string
	ApprovalMode  string
	ApprovalRules []byte
}

// freezeProfile freezes the agent's profile as it stands now, read in the accepting
// transaction q, narrowed by the turn's tool_names (nil keeps everything) with the
// conversation's default Runner selected (docs/api.md#conversations, acceptance step 1). A
// refusal answers as the turn's narrowing door at the message's fields.
func (e *Engine) freezeProfile(ctx context.Context, q store.Querier, agentID int64, selection string, toolNames []string, skills *skillFacts) (*AcceptedProfile, error) {
	door := declare.NarrowingDoor("message.")
	prof, err := e.profiles.Current(ctx, q, agentID)
	if err != nil {
		return nil, door.Refuse(err)
	}
	in := profiles.Acceptance{Selection: selection, ToolNames: toolNames}
	if declare.DeclaresKernelSkill(prof.Tools, &prof.Imports) {
		if in.KernelSkills, err = e.kernelSkills(ctx, q, skills); err != nil {
			return nil, err
		}
	}
	f, err := e.profiles.Accept(ctx, q, prof, in)
	if err != nil {
		return nil, door.Refuse(err)
	}
	frozen, err := frozenOf(f)
	if err != nil {
		return nil, err
	}
	return &AcceptedProfile{Frozen: *frozen, Instructions: prof.Instructions, DefaultModel: deref(prof.DefaultModel),
		ApprovalMode: prof.FrozenApprovalMode(), ApprovalRules: prof.ApprovalRules}, nil
}

// skillFacts are what the kernel entries of a skill catalog are read against at acceptance
// (docs/agent-tools.md#memory-and-skills, docs/development.md#the-declaration-compiler): the
// accepted work's frozen memory configuration and the run facts its bindings resolve with.
type skillFacts struct {
	// MemoryContext is the frozen memory configuration, as stored.
	MemoryContext        string
	WorkspacePublicID    string
	ConversationPublicID string
	// Principal is the run's memory principal.
	Principal Member
}

// runSkillFacts are a run's skill facts after acceptance: its frozen memory configuration.
func runSkillFacts(run *store.Run) *skillFacts {
	return &skillFacts{MemoryContext: run.MemoryContext, WorkspacePublicID: run.WorkspacePublicID,
		ConversationPublicID: deref(run.ConversationPublicID), Principal: memoryPrincipal(run)}
}

// kernelSkills reads the kernel skill documents acceptance freezes for a kernel skill callable:
// the frozen bindings resolved against live rows, then the skill documents of the workspace and
// user roots (the workspace's winning a name in both), read through q. Without kernel memory's
// resolver, or without facts, there are none.
func (e *Engine) kernelSkills(ctx context.Context, q store.Querier, f *skillFacts) ([]declare.KernelSkill, error) {
	if e.mem == nil || f == nil {
		return nil, nil
	}
	frozen, err := memory.ParseContext([]byte(f.MemoryContext))
	if err != nil {
		return nil, err
	}
	scopes, err := e.mem.Resolve(ctx, q, frozen, memory.RunFacts{WorkspacePublicID: f.WorkspacePublicID,
		ConversationPublicID: f.ConversationPublicID, Principal: memory.Principal{Kind: f.Principal.Kind, PublicID: f.Principal.PublicID}})
	if err != nil {
		return nil, err
	}
	if tx, ok := q.(*store.Tx); ok {
		ctx = memory.WithTx(ctx, tx)
	}
	entries, err := memory.New(e.store).KernelSkillCatalog(ctx, scopes)
	if err != nil {
		return nil, err
	}
	out := make([]declare.KernelSkill, len(entries))
	for i, en := range entries {
		out[i] = declare.KernelSkill{Source: declare.SkillSource(en.Source), Name: en.Name, Description: en.Description}
	}
	return out, nil
}

// acceptProfile freezes the answering agent's profile onto a turn of c.
func (e *Engine) acceptProfile(ctx context.Context, q store.Querier, c *store.Conversation, toolNames []string) (*AcceptedProfile, error) {
	return e.acceptProfileFor(ctx, q, c, c.AnsweringAgentID, c.AnsweringAgentPublicID, toolNames)
}

// acceptProfileFor freezes the profile of the agent that answers a turn of c: its answering
// agent, or the agent a send selected.
func (e *Engine) acceptProfileFor(ctx context.Context, q store.Querier, c *store.Conversation, agentID int64, agentPublicID string, toolNames []string) (*AcceptedProfile, error) {
	// The turn's run will freeze this memory configuration; its skill catalog is read against it.
	principal := Member{Kind: store.KindAgent, PublicID: agentPublicID}
	mc, err := e.freezeMemory(ctx, q, c.WorkspacePublicID, c.PublicID, principal)
	if err != nil {
		return nil, err
	}
	skills := &skillFacts{MemoryContext: mc, WorkspacePublicID: c.WorkspacePublicID, ConversationPublicID: c.PublicID, Principal: principal}
	return e.freezeProfile(ctx, q, agentID, deref(c.DefaultRunnerExecutorPublicID), toolNames, skills)
}
