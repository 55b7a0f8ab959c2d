package acceptance

import (
	"context"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// ProfileService fills Profiles with agent profiles: the answering agent's profile as it
// stands now, read in the accepting transaction, frozen through the declaration rules. A
// refusal answers as the turn's narrowing door at the message's fields.
type ProfileService struct {
	S *profiles.Service
	// KernelSkills reads the kernel skill documents for a kernel skill callable; nil reads none.
	KernelSkills runs.KernelSkills
}

var _ runs.Profiles = ProfileService{}

// AcceptProfile implements Profiles.
func (p ProfileService) AcceptProfile(ctx context.Context, q store.Querier, agentID int64, in *runs.ProfileAcceptance) (*runs.AcceptedProfile, error) {
	door := declare.NarrowingDoor(in.Path)
	prof, err := p.S.Current(ctx, q, agentID)
	if err != nil {
		return nil, door.Refuse(err)
	}
	var skills []declare.KernelSkill
	if p.KernelSkills != nil && in.Skills != nil && declaresKernelSkill(prof.Tools.Entries(), prof.Imports.KernelTools) {
		if skills, err = p.KernelSkills(ctx, q, *in.Skills); err != nil {
			return nil, err
		}
	}
	f, err := p.S.Accept(ctx, q, prof, profiles.Acceptance{Selection: in.Selection, ToolNames: in.ToolNames, KernelSkills: skills})
	if err != nil {
		return nil, door.Refuse(err)
	}
	env, err := f.Environment.MarshalJSON()
	if err != nil {
		return nil, err
	}
	cat, err := f.SkillCatalog.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return &runs.AcceptedProfile{
		Frozen:        runs.FrozenDeclaration{ToolDefinitions: f.ToolDefinitions.Bytes(), Environment: env, SkillCatalog: cat, HasTools: f.ToolDefinitions.Len() > 0},
		Instructions:  prof.Instructions,
		DefaultModel:  deref(prof.DefaultModel),
		ApprovalMode:  prof.FrozenApprovalMode(),
		ApprovalRules: prof.ApprovalRules,
	}, nil
}
