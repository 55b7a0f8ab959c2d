package runs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/projection"
	"github.com/nexuskernel/nexus/core/store"
)

// addressCall is addressing (docs/development.md#how-the-kernel-runs-work) with the skill tool's
// routing by source (docs/agent-tools.md#memory-and-skills): a call of a Runner's skill callable
// goes to that Runner only for a name its frozen catalog holds, and only while the Runner still
// announces both the skill tool and that document; a name outside the catalog is the kernel's to
// answer (skill_unknown). Every other call is addressed as the rules of
// docs/api.md#health-and-the-catalog say.
func (e *Engine) addressCall(ctx context.Context, q store.Querier, run *store.Run, ts *projection.Round, res CallResolution) (Address, error) {
	if res.Route == nil || res.Route.ToolName != skillWire {
		return e.address(ctx, q, run, res)
	}
	callable := res.Alias
	if callable == "" {
		callable = res.ToolName
	}
	var in struct {
		Name json.RawMessage `json:"name"`
	}
	_ = json.Unmarshal(res.Input, &in)
	var name string
	entry, ok := declare.SkillEntry{}, false
	if json.Unmarshal(in.Name, &name) == nil {
		entry, ok = ts.FrozenSkill(callable, name)
	}
	if !ok || entry.Source != declare.SourceRunner {
		// No frozen source for the name: the kernel answers skill_unknown in-process.
		skill, _ := e.registry.Resolve(declare.CanonicalSkill)
		return Address{Profile: skill.Effect}, nil
	}
	// The Runner must still be active and announce both its skill tool and the document; the
	// failure names the Runner and the skill, whichever of them is gone.
	withdrawn := notServed(fmt.Sprintf("runner %s no longer serves skill %s", entry.RunnerExecutorPublicID, name))
	addr, err := e.address(ctx, q, run, res)
	if err != nil {
		return Address{}, err
	}
	if addr.Failure != nil {
		return withdrawn, nil
	}
	runners, err := profiles.Runners(ctx, q, run.WorkspaceID, []string{entry.RunnerExecutorPublicID})
	if err != nil {
		return Address{}, err
	}
	served := false
	for _, r := range runners {
		for _, d := range r.Announcement.Documents {
			served = served || d.Name == name
		}
	}
	if !served {
		return withdrawn, nil
	}
	scope, err := e.skillScope(ctx, q, run)
	if err != nil {
		return Address{}, err
	}
	addr.Scope = scope
	return addr, nil
}

// skillWire is the served name of a Runner's own skill tool: nexus.skill.load's wire name.
const skillWire = "skill"

// skillScope is a Runner skill row's scope (docs/agent-tools.md#delegation-and-conversations): the
// workspace, the conversation (null on a standalone run) and the person the run's memory belongs to
// (null when it has none), so that the Runner can pick the document that person may read.
func (e *Engine) skillScope(ctx context.Context, q store.Querier, run *store.Run) (json.RawMessage, error) {
	var person *string
	if e.mem != nil {
		p := memoryPrincipal(run)
		id, err := e.mem.ControllingPerson(ctx, q, memory.Principal{Kind: p.Kind, PublicID: p.PublicID})
		if err != nil {
			return nil, err
		}
		if id != "" {
			person = &id
		}
	}
	return json.Marshal(struct {
		Workspace    string  `json:"workspace_public_id"`
		Conversation *string `json:"conversation_public_id"`
		User         *string `json:"user_public_id"`
	}{run.WorkspacePublicID, run.ConversationPublicID, person})
}
