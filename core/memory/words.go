package memory

import (
	"github.com/nexuskernel/nexus/core/refusal"
)

// Words of the member doors and the skill load path beyond sdk/memory's vocabulary
// (docs/agent-tools.md#memory-and-skills, docs/api.md#memory). The memory words the doors share
// with the tools (memory_path_invalid, memory_full, …) are sdk/memory's Code constants.
const (
	// CodeSkillNameInvalid: a skills/ path whose skill name is not one segment of
	// lowercase words joined by hyphens, at most 64 characters.
	CodeSkillNameInvalid = "skill_name_invalid"
	// CodeSkillScopeUnavailable: a skill written under a root other than workspace or user.
	CodeSkillScopeUnavailable = "skill_scope_unavailable"
	// CodeSkillDescriptionRequired: a skill written without a non-blank description.
	CodeSkillDescriptionRequired = "skill_description_required"
	// CodeDescriptionInvalid: a description on a document outside skills/, or one that is not
	// a string of at most 1,024 bytes of text.
	CodeDescriptionInvalid = "memory_description_invalid"
	// CodeStaleObject: a conditional write whose expected document is not the one at the path.
	CodeStaleObject = refusal.CodeStaleObject
	// CodeSkillUnknown: a skill name not in the frozen catalog, or whose document is gone.
	CodeSkillUnknown = "skill_unknown"
	// TitleSkillRefused is the title of a skill_unknown result.
	TitleSkillRefused = "skill refused"
	// CodeProviderUnreachable: the workspace hands its memory to an executor whose documents
	// this server cannot reach for a person (409): one that is not a memory plugin of this
	// server's catalog, or one revoked or no longer serving the workspace.
	CodeProviderUnreachable = "memory_provider_unreachable"
	// CodeConditionsUnsupported: a member write, edit or delete of a document the workspace's
	// memory plugin holds, when the plugin speaks a protocol before 1.3 (409): it keeps no
	// document ids and ignores an expected version, so the door's condition could not be kept.
	CodeConditionsUnsupported = "memory_conditions_unsupported"
)
