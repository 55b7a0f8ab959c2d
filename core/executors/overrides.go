package executors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nexuskernel/nexus/core/identity"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// The override rule's words (docs/api.md#the-memory-override).
const (
	// OverridableFamily is the one family a workspace may hand to a tool provider.
	OverridableFamily = "nexus.memory"
	// MaxOverridesBytes bounds the override map's canonical JSON: one key and one UUID take
	// about sixty bytes, so the bound leaves room for future families without letting the map
	// become a store.
	MaxOverridesBytes = 2048

	WordNotOverridable   = "not_overridable"
	WordInvalidValue     = "invalid_value"
	WordUnknownExecutor  = "unknown_executor"
	WordNotAToolProvider = "not_a_tool_provider"
	WordExecutorRevoked  = identity.CodeExecutorRevoked
	WordNotEligible      = "not_eligible"
	WordIncompleteFamily = "incomplete_family"
	CodeStaleObject      = refusal.CodeStaleObject
)

// MemoryWireNames are the six names an override target must announce, in wire spelling.
var MemoryWireNames = []string{memsdk.ToolLs, memsdk.ToolRead, memsdk.ToolGrep, memsdk.ToolWrite, memsdk.ToolEdit, memsdk.ToolDelete}

// OverridesDoc is the override routes' answer.
type OverridesDoc struct {
	ToolProviderOverrides map[string]string `json:"tool_provider_overrides"`
	LockVersion           int64             `json:"lock_version"`
}

func parseOverrides(raw string) (map[string]string, error) {
	m := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("executors: a stored override map: %w", err)
	}
	return m, nil
}

// ToolProviderOverrides answers the workspace's override map and lock version
// (docs/api.md#the-memory-override); the caller's owner standing is checked by the route.
func (s *Service) ToolProviderOverrides(ctx context.Context, workspaceID int64) (*OverridesDoc, error) {
	raw, version, err := store.ToolProviderOverrides(ctx, s.store.Reader(), workspaceID)
	if err != nil {
		return nil, err
	}
	m, err := parseOverrides(raw)
	if err != nil {
		return nil, err
	}
	return &OverridesDoc{ToolProviderOverrides: m, LockVersion: version}, nil
}

func overrideRefusal(key, word, format string, args ...any) *refusal.Error {
	return refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, format, args...).
		With("path", "tool_provider_overrides."+key).With("word", word)
}

// PutOverridesRequest is the override door's request as its body decodes: the map and the lock
// version, each judged by PutToolProviderOverrides. A field the body does not carry is nil.
type PutOverridesRequest struct {
	WorkspaceID         int64           `json:"-"`
	Overrides           json.RawMessage `json:"tool_provider_overrides"`
	ExpectedLockVersion json.RawMessage `json:"expected_lock_version"`
}

// PutToolProviderOverrides replaces the workspace's override map whole
// (docs/api.md#the-memory-override): 400 parameter_missing / parameter_invalid for the body (the
// door refuses a body that is not one JSON object, and keys it does not know), 422
// validation_failed (with path and word) for the map, 409 memory_root_split when the target is a
// plugin whose live instances keep memory in different roots, 409 stale_object (with
// current_lock_version) when expected_lock_version is not the current one. Rows already born keep their address; rows
// born after the commit read the new map.
func (s *Service) PutToolProviderOverrides(ctx context.Context, req *PutOverridesRequest) (*OverridesDoc, error) {
	workspaceID, rawMap, rawVersion := req.WorkspaceID, req.Overrides, req.ExpectedLockVersion
	if rawMap == nil {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterMissing, "tool_provider_overrides is required.").With("path", "tool_provider_overrides")
	}
	if rawVersion == nil {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterMissing, "expected_lock_version is required.").With("path", "expected_lock_version")
	}
	expected, ok := nonNegativeInteger(rawVersion)
	if !ok {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "expected_lock_version must be a non-negative integer.").With("path", "expected_lock_version")
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(rawMap, &entries); err != nil || entries == nil {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "tool_provider_overrides must be a JSON object.").With("path", "tool_provider_overrides")
	}
	canon, err := jsonwire.CanonicalValue(rawMap)
	if err != nil {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "tool_provider_overrides must be a JSON object.").With("path", "tool_provider_overrides")
	}
	if len(canon) > MaxOverridesBytes {
		return nil, refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed,
			"tool_provider_overrides is %d bytes of canonical JSON; at most %d.", len(canon), MaxOverridesBytes).With("path", "tool_provider_overrides")
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	values := map[string]string{}
	for _, k := range keys {
		if k != OverridableFamily {
			return nil, overrideRefusal(k, WordNotOverridable, "Only %s can be overridden; %s cannot.", OverridableFamily, k)
		}
		var v string
		if err := json.Unmarshal(entries[k], &v); err != nil || !store.IsPublicID(strings.ToLower(v)) {
			return nil, overrideRefusal(k, WordInvalidValue, "The value of %s must be an executor's public id (a UUID string).", k)
		}
		values[k] = strings.ToLower(v)
	}
	var out *OverridesDoc
	err = s.store.Write(ctx, func(tx *store.Tx) error {
		if err := store.LockWorkspace(ctx, tx, workspaceID); err != nil {
			return err
		}
		for _, k := range keys {
			plugin, err := checkOverrideTarget(ctx, tx, workspaceID, k, values[k])
			if err != nil {
				return err
			}
			if plugin != "" {
				if err := s.checkRootSplit(ctx, tx, k, plugin); err != nil {
					return err
				}
			}
		}
		_, current, err := store.ToolProviderOverrides(ctx, tx, workspaceID)
		if err != nil {
			return err
		}
		if current != expected {
			return refusal.Newf(refusal.Conflict, CodeStaleObject, "The override map is at lock version %d, not %d.", current, expected).
				With("current_lock_version", current)
		}
		stored, err := json.Marshal(values)
		if err != nil {
			return err
		}
		if err := store.PutToolProviderOverrides(ctx, tx, workspaceID, string(stored), current+1); err != nil {
			return err
		}
		out = &OverridesDoc{ToolProviderOverrides: values, LockVersion: current + 1}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkOverrideTarget applies the map's executor checks in the order
// (docs/api.md#the-memory-override) and answers the plugin that manages the target, "" for an
// executor of its own.
func checkOverrideTarget(ctx context.Context, q store.Querier, workspaceID int64, key, id string) (string, error) {
	e, err := store.ExecutorByPublicID(ctx, q, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && e.WorkspaceID != workspaceID) {
		// Another workspace's executor reads the same as none (docs/api.md#identity).
		return "", overrideRefusal(key, WordUnknownExecutor, "No executor %s in this workspace.", id)
	}
	if err != nil {
		return "", err
	}
	if e.Kind != RoleToolProvider {
		return "", overrideRefusal(key, WordNotAToolProvider, "Executor %s is a %s, not a tool_provider.", id, e.Kind)
	}
	if e.Status != store.ExecutorActive {
		return "", overrideRefusal(key, WordExecutorRevoked, "Executor %s is revoked.", id)
	}
	m, err := store.ManagementOf(ctx, q, e.ID)
	if err != nil {
		return "", err
	}
	if m.ManagedBy != "" && !m.Eligible {
		return "", overrideRefusal(key, WordNotEligible, "Executor %s (plugin %s) does not serve this workspace.", id, m.ManagedBy)
	}
	var missing []string
	for _, name := range MemoryWireNames {
		ok, err := store.Announces(ctx, q, e.ID, name)
		if err != nil {
			return "", err
		}
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return "", overrideRefusal(key, WordIncompleteFamily, "Executor %s does not announce %s.", id, strings.Join(missing, ", ")).
			With("missing", missing)
	}
	return m.ManagedBy, nil
}

// nonNegativeInteger reads a JSON integer literal of at least zero.
func nonNegativeInteger(raw json.RawMessage) (int64, bool) { return jsonwire.NonNegativeInteger(raw) }

// MemoryOverrides is the run engine's view of the override rule (runs.MemoryOverrides): the
// workspace's map, the run's resolved bindings for the pre-dispatch checks, and the target's
// standing, all read in the birth transaction.
type MemoryOverrides struct {
	Resolver *kmemory.Resolver
}

var _ runs.MemoryOverrides = MemoryOverrides{}

// Override answers the executor the workspace hands nexus.memory to, if any.
func (MemoryOverrides) Override(ctx context.Context, q store.Querier, workspaceID int64) (string, bool, error) {
	raw, _, err := store.ToolProviderOverrides(ctx, q, workspaceID)
	if err != nil {
		return "", false, err
	}
	m, err := parseOverrides(raw)
	if err != nil {
		return "", false, err
	}
	id, ok := m[OverridableFamily]
	return id, ok, nil
}

// Scopes resolves the run's frozen memory bindings now (docs/agent-tools.md#memory-and-skills).
func (o MemoryOverrides) Scopes(ctx context.Context, q store.Querier, run *store.Run) ([]memsdk.Scope, error) {
	frozen, err := kmemory.ParseContext([]byte(run.MemoryContext))
	if err != nil {
		return nil, err
	}
	p := runs.MemoryPrincipal(run)
	conv := ""
	if run.ConversationPublicID != nil {
		conv = *run.ConversationPublicID
	}
	return o.Resolver.Resolve(ctx, q, frozen, kmemory.RunFacts{WorkspacePublicID: run.WorkspacePublicID,
		ConversationPublicID: conv, Principal: kmemory.Principal{Kind: p.Kind, PublicID: p.PublicID}})
}

// Target answers the target's standing in the workspace: gone, moved or revoked read as revoked.
func (MemoryOverrides) Target(ctx context.Context, q store.Querier, workspaceID int64, id string) (runs.TargetStanding, error) {
	e, err := store.ExecutorByPublicID(ctx, q, id)
	if errors.Is(err, store.ErrNotFound) {
		return runs.TargetRevoked, nil
	}
	if err != nil {
		return 0, err
	}
	if e.WorkspaceID != workspaceID || e.Status != store.ExecutorActive {
		return runs.TargetRevoked, nil
	}
	m, err := store.ManagementOf(ctx, q, e.ID)
	if err != nil {
		return 0, err
	}
	if m.ManagedBy != "" && !m.Eligible {
		return runs.TargetNotEligible, nil
	}
	return runs.TargetActive, nil
}

// MemoryTarget answers, for the member memory doors (docs/api.md#memory), the executor the
// workspace's override hands nexus.memory to ("" when the workspace keeps kernel memory) and the
// catalog name of the memory plugin that runs it ("" when none does: an executor of its own, or
// one revoked or no longer eligible in the workspace). It is read at each call, never kept.
func (s *Service) MemoryTarget(ctx context.Context, workspaceID int64) (executor, plugin string, err error) {
	q := s.store.Reader()
	id, ok, err := MemoryOverrides{}.Override(ctx, q, workspaceID)
	if err != nil || !ok {
		return "", "", err
	}
	standing, err := MemoryOverrides{}.Target(ctx, q, workspaceID, id)
	if err != nil || standing != runs.TargetActive {
		return id, "", err
	}
	e, err := store.ExecutorByPublicID(ctx, q, id)
	if err != nil {
		return "", "", err
	}
	m, err := store.ManagementOf(ctx, q, e.ID)
	if err != nil {
		return "", "", err
	}
	return id, m.ManagedBy, nil
}
