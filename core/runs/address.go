package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexuskernel/nexus/core/declare"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/projection"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
	memory "github.com/nexuskernel/nexus/sdk/memory"
)

// Address is the addressing decision frozen on a tool row at birth
// (docs/development.md#how-the-kernel-runs-work).
type Address struct {
	// Role is "" (the kernel runs it), "runner" or "tool_provider".
	Role string
	// Executor is the addressed executor; "" for the kernel and for a pool.
	Executor string
	// Target is set for a Runner: {executor_public_id, display_name}.
	Target *Target
	// Profile is the frozen effect profile; TimeoutMS its announced timeout (0: none).
	Profile   announce.EffectProfile
	TimeoutMS int64
	// Scope is an overridden memory row's binding projection (docs/agent-tools.md#memory-and-skills).
	Scope json.RawMessage
	// Pin is a pinned import's definition digest, which the pool claim compares
	// (docs/agent-tools.md#pinned-imports); "" when not pinned.
	Pin string
	// Failure is set when the row is born failed (tool_not_served, or an overridden memory
	// row refused before dispatch).
	Failure *TaskError
}

// Target is a Runner destination.
type Target struct {
	ExecutorPublicID string `json:"executor_public_id"`
	DisplayName      string `json:"display_name"`
}

// storedProfile is the effect profile as a row freezes it: the five keys, then timeout_ms when
// an announcement gave one.
type storedProfile struct {
	announce.EffectProfile
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

const memoryNamespace = "nexus.memory"

// FrozenAddress is what a tool row addressed to s freezes of it, as stored text: its target and
// its effect profile, the same bytes applyAddress writes. The announcement door stores it beside
// each served name, so that the create statement addresses a routed row from the store alone
// (store.Served).
func FrozenAddress(s Served) (target, profile string) {
	return *jsonText(&Target{s.ExecutorPublicID, s.DisplayName}), *jsonText(storedProfile{s.Profile, s.TimeoutMS})
}

// CallResolution is what a model's call becomes on its task row
// (docs/development.md#how-the-kernel-runs-work).
type CallResolution struct {
	Declared bool
	// ToolName is the row's tool_name: the kernel wire name for a kernel tool (alias or not),
	// the served name for a routed tool, else the called name.
	ToolName string
	// Canonical is the kernel tool the call runs, "" when not a kernel tool.
	Canonical string
	Input     json.RawMessage
	// Alias is tool_alias: the alias called, or a routed callable differing from its served name.
	Alias string
	// Route is set for a Runner-routed callable.
	Route *Route
	// Import is a tool-provider import's frozen effect profile and pin; nil otherwise.
	Import *declare.ImportFacts
}

// Route is a declared Runner route, as a tool row stores it.
type Route = store.Route

// resolveCall resolves a call by name (alias lookup included) against a round's frozen set.
// Declared is false when the name is no callable of the set. input is a JSON object.
func resolveCall(ts *projection.Round, name string, input json.RawMessage) (CallResolution, error) {
	r, err := ts.Set().ResolveCall(name, input)
	if err != nil {
		return CallResolution{}, err
	}
	out := CallResolution{Declared: r.Declared, ToolName: r.ToolName, Canonical: r.Canonical, Input: r.Input, Alias: r.Alias, Import: r.Import}
	if r.Route != nil {
		out.Route = &Route{Kind: "runner", RunnerExecutorPublicID: strings.ToLower(r.Route.RunnerID), ToolName: r.Route.ToolName}
	}
	return out, nil
}

// address decides who runs a tool row, in the specified order: an explicit Runner route, a
// kernel tool (or the workspace's memory override), a tool provider pool, nobody.
func (e *Engine) address(ctx context.Context, q store.Querier, run *store.Run, res CallResolution) (Address, error) {
	name := res.ToolName
	if res.Route != nil {
		if e.ann == nil {
			return notServed(fmt.Sprintf("runner %s does not announce %s", res.Route.RunnerExecutorPublicID, name)), nil
		}
		s, ok, err := e.ann.RunnerTool(ctx, q, run.WorkspaceID, res.Route.RunnerExecutorPublicID, name)
		if err != nil {
			return Address{}, err
		}
		if !ok {
			return notServed(fmt.Sprintf("runner %s does not announce %s", res.Route.RunnerExecutorPublicID, name)), nil
		}
		return Address{Role: store.ExecutorRunner, Executor: s.ExecutorPublicID, Target: &Target{s.ExecutorPublicID, s.DisplayName},
			Profile: s.Profile, TimeoutMS: s.TimeoutMS}, nil
	}
	if res.Canonical != "" {
		entry, ok := e.registry.Resolve(res.Canonical)
		if !ok {
			return Address{}, fmt.Errorf("runs: %s is not in the registry", res.Canonical)
		}
		if ns, _ := announce.NamespaceOf(entry.Canonical); ns == memoryNamespace && e.over != nil {
			return e.addressOverride(ctx, q, run, entry.Wire, res.Input)
		}
		return Address{Profile: entry.Effect}, nil
	}
	if e.ann != nil {
		pool, err := e.ann.PoolTool(ctx, q, run.WorkspaceID, name)
		if err != nil {
			return Address{}, err
		}
		if len(pool) > 0 {
			a := Address{Role: store.ExecutorToolProvider}
			if res.Import != nil && res.Import.EffectProfile != nil {
				// The frozen profile counts as one more member: it may make the row stricter,
				// never laxer than what the pool announces now.
				pool = append(pool[:len(pool):len(pool)], Served{Profile: *res.Import.EffectProfile})
			}
			a.Profile, a.TimeoutMS = PoolProfile(pool)
			if res.Import != nil {
				a.Pin = res.Import.Pin
			}
			return a, nil
		}
	}
	return notServed("no executor announces " + name + " in this workspace"), nil
}

func notServed(detail string) Address {
	return Address{Failure: &TaskError{Key: KeyToolNotServed, Detail: detail}}
}

// addressOverride applies docs/api.md#the-memory-override to a memory row of a workspace that hands
// the family to a provider: the pre-dispatch checks, then the target checks, then the exclusive
// address.
func (e *Engine) addressOverride(ctx context.Context, q store.Querier, run *store.Run, wire string, input json.RawMessage) (Address, error) {
	provider, ok, err := e.over.Override(ctx, q, run.WorkspaceID)
	if err != nil || !ok {
		entry, _ := e.registry.Resolve(wire)
		return Address{Profile: entry.Effect}, err
	}
	scopes, err := e.over.Scopes(ctx, q, run)
	if err != nil {
		return Address{}, err
	}
	if code, detail, ok := memory.Resolve(wire, input, scopes); !ok && (code == KeyMemoryScopeUnavailable || code == KeyMemoryReadOnly) {
		return Address{Failure: &TaskError{Key: code, Detail: detail}}, nil
	}
	switch standing, err := e.over.Target(ctx, q, run.WorkspaceID, provider); {
	case err != nil:
		return Address{}, err
	case standing == TargetRevoked:
		return notServed(fmt.Sprintf("executor %s serving nexus.memory is revoked", provider)), nil
	case standing == TargetNotEligible:
		return notServed(fmt.Sprintf("executor %s serving nexus.memory is not eligible in this workspace", provider)), nil
	}
	if e.ann == nil {
		return notServed(fmt.Sprintf("executor %s serving nexus.memory does not announce %s", provider, wire)), nil
	}
	pool, err := e.ann.PoolTool(ctx, q, run.WorkspaceID, wire)
	if err != nil {
		return Address{}, err
	}
	for _, s := range pool {
		if s.ExecutorPublicID == provider {
			return Address{Role: store.ExecutorToolProvider, Executor: provider, Profile: s.Profile, TimeoutMS: s.TimeoutMS,
				Scope: kmemory.Project(scopes).Encode()}, nil
		}
	}
	return notServed(fmt.Sprintf("executor %s serving nexus.memory does not announce %s", provider, wire)), nil
}

var kindRank = map[announce.Kind]int{announce.KindPure: 0, announce.KindReadOnly: 1, announce.KindWrite: 2}
var idemRank = map[announce.Idempotency]int{announce.IdempotencyNone: 0, announce.IdempotencyKeyed: 1, announce.IdempotencyIntrinsic: 2}

// PoolProfile is the strictest profile across a pool's members
// (docs/development.md#how-the-kernel-runs-work) and the smallest announced timeout (0 when none
// announced one).
func PoolProfile(pool []Served) (announce.EffectProfile, int64) {
	p := pool[0].Profile
	var timeout int64
	for i, s := range pool {
		if i > 0 {
			if kindRank[s.Profile.Kind] > kindRank[p.Kind] {
				p.Kind = s.Profile.Kind
			}
			p.Destructive = p.Destructive || s.Profile.Destructive
			if s.Profile.EffectScope == announce.ScopeOpen {
				p.EffectScope = announce.ScopeOpen
			}
			if idemRank[s.Profile.Idempotency] < idemRank[p.Idempotency] {
				p.Idempotency = s.Profile.Idempotency
			}
			if s.Profile.Reconciliation == announce.ReconciliationNone {
				p.Reconciliation = announce.ReconciliationNone
			}
		}
		if s.TimeoutMS > 0 && (timeout == 0 || s.TimeoutMS < timeout) {
			timeout = s.TimeoutMS
		}
	}
	return p, timeout
}
