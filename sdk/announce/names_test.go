package announce

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNameTableShape(t *testing.T) {
	t.Parallel()
	names := KernelNames()
	// Twenty kernel tools; a new one is appended only by a deliberate change to the spec.
	if len(names) != 20 {
		t.Fatalf("name table has %d rows, want 20", len(names))
	}
	canon := map[string]bool{}
	wire := map[string]bool{}
	for i, k := range names {
		if k.Position != i+1 {
			t.Errorf("row %d has position %d", i+1, k.Position)
		}
		if !IsCanonicalName(k.Canonical) || !strings.HasPrefix(k.Canonical, KernelSource+".") {
			t.Errorf("%q is not a three-segment canonical name with source %s", k.Canonical, KernelSource)
		}
		if !IsWireName(k.Wire) {
			t.Errorf("%q is not a wire name", k.Wire)
		}
		if canon[k.Canonical] || wire[k.Wire] {
			t.Errorf("duplicate name in row %d: %q / %q", k.Position, k.Canonical, k.Wire)
		}
		canon[k.Canonical], wire[k.Wire] = true, true
	}
	for w := range wire {
		if canon[w] {
			t.Errorf("wire name %q equals a canonical name", w)
		}
	}
}

func TestKernelNamesIsACopy(t *testing.T) {
	t.Parallel()
	a := KernelNames()
	a[0].Wire = "changed"
	if KernelNames()[0].Wire != "delegate_task" {
		t.Fatal("KernelNames exposes the table itself")
	}
}

func TestLookupKernelName(t *testing.T) {
	t.Parallel()
	for _, k := range KernelNames() {
		for _, name := range []string{k.Canonical, k.Wire} {
			got, ok := LookupKernelName(name)
			if !ok {
				t.Errorf("LookupKernelName(%q) found nothing", name)
				continue
			}
			if diff := cmp.Diff(k, got); diff != "" {
				t.Errorf("LookupKernelName(%q) (-want +got):\n%s", name, diff)
			}
			c, w, class, ok := Lookup(name)
			if !ok || c != k.Canonical || w != k.Wire || class != k.Class {
				t.Errorf("Lookup(%q) = %q, %q, %q, %v", name, c, w, class, ok)
			}
		}
	}
	for _, miss := range []string{
		"Memory_Read", "read", "nexus.memory", "nexus.memory.read.x", " memory_read", "memory_read ",
		"NEXUS.MEMORY.READ", "", "nexus.skill", "load", "delegate-task", "nexus.graph.other",
	} {
		if k, ok := LookupKernelName(miss); ok {
			t.Errorf("LookupKernelName(%q) = %+v, want nothing", miss, k)
		}
		if _, _, _, ok := Lookup(miss); ok {
			t.Errorf("Lookup(%q) found a kernel name", miss)
		}
	}
}

func TestClassification(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"nexus.graph", "nexus.human", "nexus.conversation", "nexus.tools", "nexus.runners"}, ReservedNamespaces()); diff != "" {
		t.Errorf("reserved namespaces (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"nexus.memory"}, OverridableNamespaces()); diff != "" {
		t.Errorf("overridable namespaces (-want +got):\n%s", diff)
	}

	// A class is decided by the namespace: every namespace's rows share one class, and the
	// class lists above are exactly the namespaces carrying that class.
	classOfNS := map[string]Class{}
	byClass := map[Class][]string{}
	for _, k := range KernelNames() {
		ns, ok := NamespaceOf(k.Canonical)
		if !ok {
			t.Fatalf("no namespace for %q", k.Canonical)
		}
		if prev, seen := classOfNS[ns]; seen {
			if prev != k.Class {
				t.Errorf("namespace %s has classes %s and %s", ns, prev, k.Class)
			}
			continue
		}
		classOfNS[ns] = k.Class
		byClass[k.Class] = append(byClass[k.Class], ns)
	}
	want := map[Class][]string{
		ClassReserved:       ReservedNamespaces(),
		ClassOverridable:    OverridableNamespaces(),
		ClassRoutedBySource: {"nexus.skill"},
		ClassOrdinary:       {"nexus.models"},
	}
	if diff := cmp.Diff(want, byClass); diff != "" {
		t.Errorf("namespaces by class (-want +got):\n%s", diff)
	}

	if c, _ := ClassOf("nexus.models.list"); c != ClassOrdinary {
		t.Errorf("ClassOf(nexus.models.list) = %q, want %q", c, ClassOrdinary)
	}
	for _, k := range KernelNames() {
		cc, okc := ClassOf(k.Canonical)
		cw, okw := ClassOf(k.Wire)
		if !okc || !okw || cc != cw || cc != k.Class {
			t.Errorf("ClassOf(%q) = %q, %v; ClassOf(%q) = %q, %v; want %q", k.Canonical, cc, okc, k.Wire, cw, okw, k.Class)
		}
		if got, want := InReservedNamespace(k.Canonical), k.Class == ClassReserved; got != want {
			t.Errorf("InReservedNamespace(%q) = %v", k.Canonical, got)
		}
		if got, want := InReservedNamespace(k.Wire), k.Class == ClassReserved; got != want {
			t.Errorf("InReservedNamespace(%q) = %v", k.Wire, got)
		}
	}
	for _, name := range []string{"Status", "nexus.graph", "nexus.graph.other", "memory_read", "skill", "models_list", ""} {
		if InReservedNamespace(name) {
			t.Errorf("InReservedNamespace(%q) = true", name)
		}
	}
	if c, ok := ClassOf("read"); ok {
		t.Errorf("ClassOf(read) = %q, true; want not a kernel name", c)
	}
}

func TestValidateOverrideKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want bool
	}{
		{"nexus.memory", true},
		{"nexus.skill", false},
		{"nexus.models", false},
		{"nexus.graph", false},
		{"nexus.human", false},
		{"nexus.conversation", false},
		{"nexus.tools", false},
		{"nexus.runners", false},
		{"nexus.memory.read", false},
		{"memory_read", false},
		{"Nexus.memory", false},
		{"nexus.memory ", false},
		{"memory", false},
		{"", false},
	}
	for _, tt := range tests {
		err := ValidateOverrideKey(tt.key)
		if (err == nil) != tt.want {
			t.Errorf("ValidateOverrideKey(%q) = %v, want accepted %v", tt.key, err, tt.want)
		}
		if err != nil && !errors.Is(err, ErrNotOverridable) {
			t.Errorf("ValidateOverrideKey(%q) = %v, not ErrNotOverridable", tt.key, err)
		}
	}
}

func TestNamespaceOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"nexus.memory.read", "nexus.memory", true},
		{"nexus.graph.delegate_task", "nexus.graph", true},
		{"rho.fs.read", "rho.fs", true},
		{"nexus.memory", "", false},
		{"memory_read", "", false},
		{"nexus.memory.read.x", "", false},
		{"Nexus.memory.read", "", false},
	}
	for _, tt := range tests {
		got, ok := NamespaceOf(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NamespaceOf(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
