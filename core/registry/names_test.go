package registry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/announce"
)

func TestNames(t *testing.T) {
	t.Parallel()
	r := New()
	canon := map[string]bool{}
	wire := map[string]bool{}
	for _, e := range r.Entries() {
		if !announce.IsCanonicalName(e.Canonical) || !strings.HasPrefix(e.Canonical, announce.KernelSource+".") {
			t.Errorf("%q is not a three-segment canonical name with source %s", e.Canonical, announce.KernelSource)
		}
		if !announce.IsWireName(e.Wire) || len(e.Wire) > announce.MaxWireNameLength {
			t.Errorf("%q is not a wire name of at most %d characters", e.Wire, announce.MaxWireNameLength)
		}
		if canon[e.Canonical] {
			t.Errorf("canonical name %q repeats", e.Canonical)
		}
		if wire[e.Wire] {
			t.Errorf("wire name %q repeats", e.Wire)
		}
		canon[e.Canonical], wire[e.Wire] = true, true
	}
	for w := range wire {
		if canon[w] {
			t.Errorf("wire name %q equals a canonical name", w)
		}
	}

	// The alias index is a bijection from the twenty wire names onto the twenty canonical names.
	if len(r.aliasIndex) != len(r.entries) {
		t.Fatalf("alias index has %d keys for %d entries", len(r.aliasIndex), len(r.entries))
	}
	image := map[string]bool{}
	for w, c := range r.aliasIndex {
		if !wire[w] || !canon[c] || image[c] {
			t.Errorf("alias index %q -> %q is not part of a bijection", w, c)
		}
		image[c] = true
	}
	if len(image) != len(canon) {
		t.Errorf("alias index reaches %d of %d canonical names", len(image), len(canon))
	}

	var order []string
	for _, row := range pinnedTable {
		order = append(order, row.Canonical)
	}
	if diff := cmp.Diff(order, r.Canonicals()); diff != "" {
		t.Errorf("Canonicals (-want +got):\n%s", diff)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	r := New()
	for _, e := range r.Entries() {
		byCanon, ok1 := r.Resolve(e.Canonical)
		byWire, ok2 := r.Resolve(e.Wire)
		if !ok1 || !ok2 {
			t.Errorf("Resolve(%q) = %v, Resolve(%q) = %v", e.Canonical, ok1, e.Wire, ok2)
			continue
		}
		if diff := cmp.Diff(e, byCanon); diff != "" {
			t.Errorf("Resolve(%q) (-want +got):\n%s", e.Canonical, diff)
		}
		if diff := cmp.Diff(e, byWire); diff != "" {
			t.Errorf("Resolve(%q) (-want +got):\n%s", e.Wire, diff)
		}
	}
	for _, miss := range []string{
		"Memory_Read", "read", "nexus.memory", "nexus.memory.read.x", " memory_read",
		"memory_read ", "MEMORY_READ", "nexus.Memory.read", "", "load", "nexus.skill",
	} {
		if e, ok := r.Resolve(miss); ok {
			t.Errorf("Resolve(%q) = %s, want nothing", miss, e.Canonical)
		}
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	t.Parallel()
	r := New()
	es := r.Entries()
	es[0].Schema[0] = 'X'
	es[0].Wire = "changed"
	e, _ := r.Resolve("delegate_task")
	e.Schema[1] = 'X'
	body := r.CatalogBody()
	body[0] = 'X'
	pack := r.ContractPack()
	pack[0] = 'X'

	fresh := New()
	if diff := cmp.Diff(fresh.Entries(), r.Entries()); diff != "" {
		t.Errorf("a caller changed the registry's entries (-fresh +used):\n%s", diff)
	}
	if string(fresh.CatalogBody()) != string(r.CatalogBody()) || string(fresh.ContractPack()) != string(r.ContractPack()) {
		t.Error("a caller changed the registry's bytes")
	}
}

func TestClassification(t *testing.T) {
	t.Parallel()
	reserved := map[string]bool{}
	for _, ns := range announce.ReservedNamespaces() {
		reserved[ns] = true
	}
	for _, e := range New().Entries() {
		ns, _ := announce.NamespaceOf(e.Canonical)
		for _, name := range []string{e.Canonical, e.Wire} {
			if c, ok := announce.ClassOf(name); !ok || c != e.Class {
				t.Errorf("ClassOf(%q) = %q, %v; entry says %q", name, c, ok, e.Class)
			}
		}
		var want announce.Class
		switch {
		case reserved[ns]:
			want = announce.ClassReserved
		case ns == "nexus.memory":
			want = announce.ClassOverridable
		case ns == "nexus.skill":
			want = announce.ClassRoutedBySource
		default:
			want = announce.ClassOrdinary
		}
		if e.Class != want {
			t.Errorf("%s is %q, its namespace %s says %q", e.Canonical, e.Class, ns, want)
		}
		if got := announce.ValidateOverrideKey(ns) == nil; got != (e.Class == announce.ClassOverridable) {
			t.Errorf("override key %s accepted = %v for class %q", ns, got, e.Class)
		}
	}
	if e, _ := New().Resolve("nexus.models.list"); e.Class != announce.ClassOrdinary {
		t.Errorf("nexus.models.list is %q, want no class (ordinary)", e.Class)
	}
}
