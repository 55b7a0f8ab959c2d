package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// MessagingPolicy is a workspace's agent messaging policy
// (docs/agent-tools.md#delegation-and-conversations): each listed agent's setting, public or
// private, and the lock version a whole replacement must name. An agent absent from Agents is
// public.
type MessagingPolicy struct {
	Agents      map[string]string
	LockVersion int64
}

// The request paths of the policy door.
const (
	pathMessagingPolicy = "agent_messaging_policy"
	pathPolicyAgents    = "agent_messaging_policy.agents"
	pathExpectedLock    = "expected_lock_version"
)

func parsePolicy(raw string) (map[string]string, error) {
	m := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("identity: a stored messaging policy: %w", err)
	}
	return m, nil
}

// MessagingPolicy answers the workspace's agent messaging policy; acc must carry owner standing
// (checked by Access with NeedOwner).
func (d *Directory) MessagingPolicy(ctx context.Context, acc *Access) (*MessagingPolicy, error) {
	raw, version, err := store.AgentMessagingPolicy(ctx, d.store.Reader(), acc.Workspace.ID)
	if err != nil {
		return nil, err
	}
	m, err := parsePolicy(raw)
	if err != nil {
		return nil, err
	}
	return &MessagingPolicy{Agents: m, LockVersion: version}, nil
}

func badRequest(code, path, text string) error {
	return refusal.New(refusal.BadRequest, code, text).With("path", path)
}

// PutMessagingPolicyRequest is the policy door's request as its body decodes: the policy object and
// the lock version, each judged by PutMessagingPolicy. A field the body does not carry is nil.
type PutMessagingPolicyRequest struct {
	Policy              json.RawMessage `json:"agent_messaging_policy"`
	ExpectedLockVersion json.RawMessage `json:"expected_lock_version"`
}

// PutMessagingPolicy replaces the workspace's agent messaging policy whole
// (docs/agent-tools.md#delegation-and-conversations). Body checks come first, as 400s (the door
// refuses a body that is not one JSON object, and keys it does not know):
// agent_messaging_policy and its agents present (parameter_missing) and objects
// (parameter_invalid), expected_lock_version present and a non-negative integer. Then each entry in
// key order, as 422 validation_failed with the entry's path: the key an agent of this workspace (by
// public id, not removed), the value public or private. Then, under the workspace's lock with the
// caller's owner standing checked again, 409 stale_object with current_lock_version when
// expected_lock_version is not the current one. Keys are stored in canonical (lowercase) form.
func (d *Directory) PutMessagingPolicy(ctx context.Context, acc *Access, req *PutMessagingPolicyRequest) (*MessagingPolicy, error) {
	rawPolicy := req.Policy
	if rawPolicy == nil {
		return nil, badRequest(refusal.CodeParameterMissing, pathMessagingPolicy, "agent_messaging_policy is required.")
	}
	var policy map[string]json.RawMessage
	if err := json.Unmarshal(rawPolicy, &policy); err != nil || policy == nil {
		return nil, badRequest(refusal.CodeParameterInvalid, pathMessagingPolicy, "agent_messaging_policy must be a JSON object.")
	}
	rawAgents, ok := policy["agents"]
	if !ok {
		return nil, badRequest(refusal.CodeParameterMissing, pathPolicyAgents, "agent_messaging_policy.agents is required.")
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(rawAgents, &entries); err != nil || entries == nil {
		return nil, badRequest(refusal.CodeParameterInvalid, pathPolicyAgents, "agent_messaging_policy.agents must be a JSON object.")
	}
	rawVersion := req.ExpectedLockVersion
	if rawVersion == nil {
		return nil, badRequest(refusal.CodeParameterMissing, pathExpectedLock, "expected_lock_version is required.")
	}
	expected, ok := jsonwire.NonNegativeInteger(rawVersion)
	if !ok {
		return nil, badRequest(refusal.CodeParameterInvalid, pathExpectedLock, "expected_lock_version must be a non-negative integer.")
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out *MessagingPolicy
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		if err := d.recheck(ctx, tx, acc, NeedOwner); err != nil {
			return err
		}
		agents := make(map[string]string, len(keys))
		for _, k := range keys {
			path := pathPolicyAgents + "." + k
			id, ok := canonicalID(k)
			if !ok {
				return invalid(path, "%q is not an agent public id.", k)
			}
			ag, err := store.AgentInWorkspace(ctx, tx, acc.Workspace.ID, id)
			if errors.Is(err, store.ErrNotFound) || (err == nil && ag.RemovedAt.Valid) {
				return invalid(path, "No agent %s in this workspace.", id)
			}
			if err != nil {
				return err
			}
			var v string
			if err := json.Unmarshal(entries[k], &v); err != nil || (v != store.MessagingPublic && v != store.MessagingPrivate) {
				return invalid(path, "The setting of agent %s must be %q or %q.", id, store.MessagingPublic, store.MessagingPrivate)
			}
			if _, dup := agents[id]; dup {
				return invalid(path, "Agent %s is listed twice.", id)
			}
			agents[id] = v
		}
		_, current, err := store.AgentMessagingPolicy(ctx, tx, acc.Workspace.ID)
		if err != nil {
			return err
		}
		if current != expected {
			return refusal.Newf(refusal.Conflict, refusal.CodeStaleObject, "The messaging policy is at lock version %d, not %d.", current, expected).
				With("current_lock_version", current)
		}
		stored, err := json.Marshal(agents)
		if err != nil {
			return err
		}
		if err := store.PutAgentMessagingPolicy(ctx, tx, acc.Workspace.ID, string(stored), current+1); err != nil {
			return err
		}
		out = &MessagingPolicy{Agents: agents, LockVersion: current + 1}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
