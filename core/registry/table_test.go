package registry

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/announce"
)

type pinnedRow struct {
	Position  int
	Canonical string
	Wire      string
	Class     announce.Class
	Effect    EffectName
}

// pinnedTable is the registry table (docs/agent-tools.md#the-twenty-kernel-tools), literally. A
// wire name is never computed from its canonical name; this table is the guard.
var pinnedTable = []pinnedRow{
	{1, "nexus.graph.delegate_task", "delegate_task", "reserved", "GRAPH_WRITE"},
	{2, "nexus.graph.wait", "wait", "reserved", "GRAPH_WRITE"},
	{3, "nexus.human.ask", "ask", "reserved", "GRAPH_WRITE"},
	{4, "nexus.conversation.spawn", "spawn", "reserved", "GRAPH_WRITE"},
	{5, "nexus.conversation.send", "send", "reserved", "GRAPH_WRITE"},
	{6, "nexus.conversation.status", "status", "reserved", "READ_ONLY_CLOSED"},
	{7, "nexus.conversation.cancel", "cancel", "reserved", "GRAPH_WRITE"},
	{8, "nexus.conversation.read", "session_read", "reserved", "READ_ONLY_CLOSED"},
	{9, "nexus.conversation.search", "session_search", "reserved", "READ_ONLY_CLOSED"},
	{10, "nexus.memory.ls", "memory_ls", "overridable", "MEMORY_READ"},
	{11, "nexus.memory.read", "memory_read", "overridable", "MEMORY_READ"},
	{12, "nexus.memory.grep", "memory_grep", "overridable", "MEMORY_READ"},
	{13, "nexus.memory.write", "memory_write", "overridable", "MEMORY_WRITE"},
	{14, "nexus.memory.edit", "memory_edit", "overridable", "MEMORY_EDIT"},
	{15, "nexus.memory.delete", "memory_delete", "overridable", "MEMORY_WRITE"},
	{16, "nexus.tools.search", "tool_search", "reserved", "READ_ONLY_CLOSED"},
	{17, "nexus.tools.call", "tool_call", "reserved", "GRAPH_WRITE"},
	{18, "nexus.runners.list", "runners_list", "reserved", "READ_ONLY_CLOSED"},
	{19, "nexus.models.list", "models_list", "ordinary", "READ_ONLY_CLOSED"},
	{20, "nexus.skill.load", "skill", "routed_by_source", "READ_ONLY_CLOSED"},
}

func TestPinnedTable(t *testing.T) {
	t.Parallel()
	var got []pinnedRow
	for _, e := range New().Entries() {
		got = append(got, pinnedRow{e.Position, e.Canonical, e.Wire, e.Class, e.EffectName})
	}
	if diff := cmp.Diff(pinnedTable, got); diff != "" {
		t.Errorf("registry table differs from the pinned table (-want +got):\n%s", diff)
	}

	var names []pinnedRow
	for _, k := range announce.KernelNames() {
		names = append(names, pinnedRow{k.Position, k.Canonical, k.Wire, k.Class, ""})
	}
	want := make([]pinnedRow, len(pinnedTable))
	for i, r := range pinnedTable {
		r.Effect = ""
		want[i] = r
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("sdk/announce name table differs from the pinned table (-want +got):\n%s", diff)
	}
}

func TestEffectProfiles(t *testing.T) {
	t.Parallel()
	// docs/agent-tools.md#the-twenty-kernel-tools, literally.
	constants := map[EffectName]string{
		ReadOnlyClosed: `{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
		GraphWrite:     `{"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"lookup"}`,
		MemoryRead:     `{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
		MemoryWrite:    `{"kind":"write","destructive":true,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"lookup"}`,
		MemoryEdit:     `{"kind":"write","destructive":true,"effect_scope":"closed","idempotency":"none","reconciliation":"lookup"}`,
	}
	for _, name := range EffectNames() {
		p, ok := name.Profile()
		if !ok {
			t.Errorf("%s has no profile", name)
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != constants[name] {
			t.Errorf("%s = %s, want %s", name, b, constants[name])
		}
	}
	if len(EffectNames()) != len(constants) {
		t.Errorf("EffectNames has %d names, want %d", len(EffectNames()), len(constants))
	}
	if _, ok := EffectName("READ_ONLY").Profile(); ok {
		t.Error("an unknown effect name has a profile")
	}

	// Every served profile: the five keys in order, in the vocabulary, consistent, and
	// replayable except memory_edit's.
	entries := New().Entries()
	for i, raw := range servedEntries(t, New().CatalogBody()) {
		e := entries[i]
		prof, ok := get(members(t, raw), "effect_profile")
		if !ok {
			t.Errorf("%s: no effect_profile", e.Wire)
			continue
		}
		if diff := cmp.Diff(announce.ProfileKeys(), keysOf(members(t, prof))); diff != "" {
			t.Errorf("%s: effect_profile keys (-want +got):\n%s", e.Wire, diff)
		}
		parsed, err := announce.ParseEffectProfile(prof)
		if err != nil {
			t.Errorf("%s: served effect_profile: %v", e.Wire, err)
			continue
		}
		if diff := cmp.Diff(e.Effect, parsed); diff != "" {
			t.Errorf("%s: served profile differs from the entry (-entry +served):\n%s", e.Wire, diff)
		}
		if string(prof) != constants[e.EffectName] {
			t.Errorf("%s: served %s, want %s's %s", e.Wire, prof, e.EffectName, constants[e.EffectName])
		}
		if got, want := announce.Replayable(&parsed), e.Wire != "memory_edit"; got != want {
			t.Errorf("%s: Replayable = %v, want %v", e.Wire, got, want)
		}
	}
	if announce.Replayable(nil) {
		t.Error("an absent profile is replayable")
	}
}
