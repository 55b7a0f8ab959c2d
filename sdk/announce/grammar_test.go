package announce

import (
	"strings"
	"testing"
)

func TestDottedNameGrammar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in                    string
		dotted, ns, canonical bool
	}{
		{"nexus.memory", true, true, false},
		{"nexus.memory.read", true, false, true},
		{"rho.fs-2.read_file", true, false, true},
		{"0x.y", true, true, false},
		{"nexus", false, false, false},
		{"nexus.memory.read.x", false, false, false},
		{"Nexus.memory", false, false, false},
		{"nexus._memory", false, false, false},
		{"nexus.-memory", false, false, false},
		{"nexus..memory", false, false, false},
		{".nexus.memory", false, false, false},
		{"nexus.memory.", false, false, false},
		{"nexus.memory ", false, false, false},
		{"nexus.mem ory", false, false, false},
		{"nexus.memory\n", false, false, false},
		{"", false, false, false},
	}
	for _, tt := range tests {
		if got := IsDottedName(tt.in); got != tt.dotted {
			t.Errorf("IsDottedName(%q) = %v", tt.in, got)
		}
		if got := IsNamespace(tt.in); got != tt.ns {
			t.Errorf("IsNamespace(%q) = %v", tt.in, got)
		}
		if got := IsCanonicalName(tt.in); got != tt.canonical {
			t.Errorf("IsCanonicalName(%q) = %v", tt.in, got)
		}
	}
}

func TestWireNameGrammar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"delegate_task", true},
		{"a", true},
		{"tool2", true},
		{strings.Repeat("a", MaxWireNameLength), true},
		{strings.Repeat("a", MaxWireNameLength+1), false},
		{"", false},
		{"_wait", false},
		{"2wait", false},
		{"Wait", false},
		{"delegate-task", false},
		{"nexus.graph.wait", false},
		{"wait ", false},
		{"wait\n", false},
	}
	for _, tt := range tests {
		if got := IsWireName(tt.in); got != tt.want {
			t.Errorf("IsWireName(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
