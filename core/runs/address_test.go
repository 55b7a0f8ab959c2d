package runs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
)

type fakeAnnouncements struct {
	runners map[string]Served // runner id + "/" + name
	pool    map[string][]Served
}

func (f fakeAnnouncements) RunnerTool(_ context.Context, _ store.Querier, _ int64, runner, name string) (Served, bool, error) {
	s, ok := f.runners[runner+"/"+name]
	return s, ok, nil
}

func (f fakeAnnouncements) PoolTool(_ context.Context, _ store.Querier, _ int64, name string) ([]Served, error) {
	return f.pool[name], nil
}

type fakeOverrides struct {
	provider string
	scopes   []memory.Scope
	standing TargetStanding
}

func (f fakeOverrides) Target(context.Context, store.Querier, int64, string) (TargetStanding, error) {
	return f.standing, nil
}

func (f fakeOverrides) Override(context.Context, store.Querier, int64) (string, bool, error) {
	return f.provider, f.provider != "", nil
}

func (f fakeOverrides) Scopes(context.Context, store.Querier, *store.Run) ([]memory.Scope, error) {
	return f.scopes, nil
}

// TestAddressing pins the order (docs/development.md#how-the-kernel-runs-work): an explicit Runner
// route (never another Runner), a kernel tool (or the workspace's memory override, with its
// pre-dispatch and target checks), a tool provider pool with the strictest profile, nobody.
func TestAddressing(t *testing.T) {
	t.Parallel()
	runner := "01900000-0000-7000-8000-000000000051"
	provider := "01900000-0000-7000-8000-000000000077"
	ann := fakeAnnouncements{
		runners: map[string]Served{runner + "/read": {ExecutorPublicID: runner, DisplayName: "laptop", Profile: announce.EffectReadOnly, TimeoutMS: 120000}},
		pool: map[string][]Served{
			"fetch":       {{ExecutorPublicID: "a", Profile: announce.EffectReadOnly, TimeoutMS: 9000}, {ExecutorPublicID: "b", Profile: announce.EffectWrite, TimeoutMS: 5000}},
			"memory_read": {{ExecutorPublicID: provider, Profile: announce.EffectReadOnly, TimeoutMS: 3000}},
			"memory_ls":   {{ExecutorPublicID: "someone-else", Profile: announce.EffectReadOnly}},
		},
	}
	ws := "01900000-0000-7000-8000-000000000001"
	scopes := []memory.Scope{{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: ws, Access: memory.AccessReadWrite},
		{Binding: "team", Kind: memory.ScopeWorkspace, OwnerID: ws, Access: memory.AccessRead}}
	e := &Engine{registry: registry.New(), ann: ann}
	over := &Engine{registry: registry.New(), ann: ann, over: fakeOverrides{provider: provider, scopes: scopes}}
	revoked := &Engine{registry: registry.New(), ann: ann, over: fakeOverrides{provider: provider, scopes: scopes, standing: TargetRevoked}}
	ineligible := &Engine{registry: registry.New(), ann: ann, over: fakeOverrides{provider: provider, scopes: scopes, standing: TargetNotEligible}}
	run := &store.Run{WorkspaceID: 1}
	in := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		name string
		e    *Engine
		res  CallResolution
		want Address
	}{
		{"runner route", e, CallResolution{ToolName: "read", Route: &Route{Kind: "runner", RunnerExecutorPublicID: runner, ToolName: "read"}},
			Address{Role: "runner", Executor: runner, Target: &Target{runner, "laptop"}, Profile: announce.EffectReadOnly, TimeoutMS: 120000}},
		{"runner does not announce", e, CallResolution{ToolName: "fetch", Route: &Route{Kind: "runner", RunnerExecutorPublicID: runner, ToolName: "fetch"}},
			Address{Failure: &TaskError{Key: KeyToolNotServed, Detail: "runner " + runner + " does not announce fetch"}}},
		{"kernel tool", e, CallResolution{ToolName: "memory_read", Canonical: "nexus.memory.read", Input: in(`{"path":"workspace/a"}`)},
			Address{Profile: effectOf(t, "nexus.memory.read")}},
		{"models_list always in the kernel", over, CallResolution{ToolName: "models_list", Canonical: "nexus.models.list"},
			Address{Profile: effectOf(t, "nexus.models.list")}},
		{"override", over, CallResolution{ToolName: "memory_read", Canonical: "nexus.memory.read", Input: in(`{"path":"workspace/a"}`)},
			Address{Role: "tool_provider", Executor: provider, Profile: announce.EffectReadOnly, TimeoutMS: 3000,
				Scope: json.RawMessage(`{"bindings":[{"name":"workspace","scope":"workspace","access":"read_write","workspace_public_id":"` + ws + `"},{"name":"team","scope":"workspace","access":"read","workspace_public_id":"` + ws + `"}]}`)}},
		{"override, unbound root", over, CallResolution{ToolName: "memory_read", Canonical: "nexus.memory.read", Input: in(`{"path":"conversation/a"}`)},
			Address{Failure: &TaskError{Key: KeyMemoryScopeUnavailable, Detail: "conversation/a"}}},
		{"override, read-only root", over, CallResolution{ToolName: "memory_write", Canonical: "nexus.memory.write", Input: in(`{"path":"team/a","content":"x"}`)},
			Address{Failure: &TaskError{Key: KeyMemoryReadOnly, Detail: "team/a"}}},
		{"override, verb dropped", over, CallResolution{ToolName: "memory_ls", Canonical: "nexus.memory.ls", Input: in(`{}`)},
			Address{Failure: &TaskError{Key: KeyToolNotServed, Detail: "executor " + provider + " serving nexus.memory does not announce memory_ls"}}},
		{"override, target revoked", revoked, CallResolution{ToolName: "memory_read", Canonical: "nexus.memory.read", Input: in(`{"path":"workspace/a"}`)},
			Address{Failure: &TaskError{Key: KeyToolNotServed, Detail: "executor " + provider + " serving nexus.memory is revoked"}}},
		{"override, target not eligible", ineligible, CallResolution{ToolName: "memory_read", Canonical: "nexus.memory.read", Input: in(`{"path":"workspace/a"}`)},
			Address{Failure: &TaskError{Key: KeyToolNotServed, Detail: "executor " + provider + " serving nexus.memory is not eligible in this workspace"}}},
		{"override, pre-dispatch check before the target's standing", revoked, CallResolution{ToolName: "memory_write", Canonical: "nexus.memory.write", Input: in(`{"path":"team/a","content":"x"}`)},
			Address{Failure: &TaskError{Key: KeyMemoryReadOnly, Detail: "team/a"}}},
		{"override, path invalid is the provider's", over, CallResolution{ToolName: "memory_read", Canonical: "nexus.memory.read", Input: in(`{"path":"workspace/"}`)},
			Address{Role: "tool_provider", Executor: provider, Profile: announce.EffectReadOnly, TimeoutMS: 3000,
				Scope: json.RawMessage(`{"bindings":[{"name":"workspace","scope":"workspace","access":"read_write","workspace_public_id":"` + ws + `"},{"name":"team","scope":"workspace","access":"read","workspace_public_id":"` + ws + `"}]}`)}},
		{"pool", e, CallResolution{ToolName: "fetch"}, Address{Role: "tool_provider", Profile: announce.EffectProfile{Kind: announce.KindWrite,
			EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyNone, Reconciliation: announce.ReconciliationNone}, TimeoutMS: 5000}},
		{"nobody", e, CallResolution{ToolName: "ghost"}, Address{Failure: &TaskError{Key: KeyToolNotServed, Detail: "no executor announces ghost in this workspace"}}},
		{"pool, an import's frozen profile stricter than the pool's", e, CallResolution{ToolName: "memory_read",
			Import: &declare.ImportFacts{EffectProfile: &announce.EffectWrite, Pin: "sha256:" + strings.Repeat("0", 64)}},
			Address{Role: "tool_provider", Profile: announce.EffectProfile{Kind: announce.KindWrite, EffectScope: announce.ScopeClosed,
				Idempotency: announce.IdempotencyNone, Reconciliation: announce.ReconciliationNone}, TimeoutMS: 3000, Pin: "sha256:" + strings.Repeat("0", 64)}},
		{"pool, an import's laxer frozen profile changes nothing", e, CallResolution{ToolName: "fetch",
			Import: &declare.ImportFacts{EffectProfile: &announce.EffectPure}},
			Address{Role: "tool_provider", Profile: announce.EffectProfile{Kind: announce.KindWrite,
				EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyNone, Reconciliation: announce.ReconciliationNone}, TimeoutMS: 5000}},
	}
	for _, c := range cases {
		got, err := c.e.address(context.Background(), nil, run, c.res)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestPoolProfile pins docs/development.md#how-the-kernel-runs-work field by field.
func TestPoolProfile(t *testing.T) {
	t.Parallel()
	a := announce.EffectProfile{Kind: announce.KindPure, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyIntrinsic, Reconciliation: announce.ReconciliationLookup}
	b := announce.EffectProfile{Kind: announce.KindReadOnly, Destructive: true, EffectScope: announce.ScopeOpen, Idempotency: announce.IdempotencyKeyed, Reconciliation: announce.ReconciliationLookup}
	c := announce.EffectProfile{Kind: announce.KindPure, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyNone, Reconciliation: announce.ReconciliationNone}
	p, timeout := PoolProfile([]Served{{Profile: a}, {Profile: b, TimeoutMS: 7000}, {Profile: c, TimeoutMS: 3000}})
	want := announce.EffectProfile{Kind: announce.KindReadOnly, Destructive: true, EffectScope: announce.ScopeOpen, Idempotency: announce.IdempotencyNone, Reconciliation: announce.ReconciliationNone}
	if p != want || timeout != 3000 {
		t.Fatalf("pool profile %+v %d", p, timeout)
	}
	if _, timeout := PoolProfile([]Served{{Profile: a}}); timeout != 0 {
		t.Fatalf("no announced timeout: %d", timeout)
	}
}

func effectOf(t *testing.T, name string) announce.EffectProfile {
	e, ok := registry.New().Resolve(name)
	if !ok {
		t.Fatalf("%s is not registered", name)
	}
	return e.Effect
}
