package identity

import "github.com/nexuskernel/nexus/core/refusal"

// Refusal words of docs/api.md#identity and docs/api.md#executors.
const (
	// CodeHandleTaken: a create route's handle is in use (workspace and user handles are global,
	// agent handles per workspace).
	CodeHandleTaken = "handle_taken"
	// CodeAlreadyMember: the user added to a workspace is a member of it.
	CodeAlreadyMember = "already_member"
	// CodeLastOwner: removing this member would leave the workspace without an owner.
	CodeLastOwner = "last_owner"
	// CodeExecutorRevoked: a token cannot be minted for a revoked executor; revocation is final.
	CodeExecutorRevoked = "executor_revoked"
)

// Refusals of the kind and role checks (docs/api.md#planes-and-tokens).
var (
	// ErrNotUser: an agent where a user is needed (owner routes need a user).
	ErrNotUser = refusal.New(refusal.Forbidden, refusal.CodeNotUser,
		"This route needs a user's token; an agent cannot call it.")
	// ErrNotAgent: a user where an agent is needed.
	ErrNotAgent = refusal.New(refusal.Forbidden, refusal.CodeNotAgent,
		"This route needs an agent's token; a user cannot call it.")
	// ErrNotAuthorized: a member who is not an owner where an owner is needed.
	ErrNotAuthorized = refusal.New(refusal.Forbidden, refusal.CodeNotAuthorized,
		"Only an owner of this workspace may do this.")
)

func errNoWorkspace(ref string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No workspace %q.", ref)
}

func errNoMember(ref string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No member %q in this workspace.", ref)
}

func errNoExecutor(ref string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No executor %q.", ref)
}

func errNoToken(ref string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No token %q of yours.", ref)
}

// invalid is a 422 validation_failed at a request path.
func invalid(path, format string, args ...any) error {
	return refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, format, args...).With("path", path)
}

func errHandleTaken(handle string) error {
	return refusal.Newf(refusal.Conflict, CodeHandleTaken, "The handle %q is taken.", handle)
}
