package announce

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/sdk/refusal"
)

func memoryTools() []Tool {
	var out []Tool
	for _, n := range []string{"memory_ls", "memory_read", "memory_grep", "memory_write", "memory_edit", "memory_delete"} {
		out = append(out, goodTool(n))
	}
	return out
}

func TestValidatePlugin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind string
		a    Announcement
		want []refusal.Problem
	}{
		{"tool provider", PluginKindToolProvider, Announcement{Tools: []Tool{goodTool("example_echo")}, Documents: []Document{{Name: "a", Description: "b"}}}, nil},
		{"tool provider with memory names", PluginKindToolProvider, Announcement{Tools: append(memoryTools(), goodTool("lookup"))}, nil},
		{"tool provider with part of memory", PluginKindToolProvider, Announcement{Tools: []Tool{goodTool("memory_read")}}, nil},
		{"skill", PluginKindToolProvider, Announcement{Tools: []Tool{goodTool("x"), goodTool("skill")}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[1].name", Name: "skill"}}},
		{"models_list", PluginKindToolProvider, Announcement{Tools: []Tool{goodTool("models_list")}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name", Name: "models_list"}}},
		{"both", PluginKindToolProvider, Announcement{Tools: []Tool{goodTool("models_list"), goodTool("skill")}},
			[]refusal.Problem{
				{Code: CodeInvalidAnnouncement, Path: "tools[0].name", Name: "models_list"},
				{Code: CodeInvalidAnnouncement, Path: "tools[1].name", Name: "skill"},
			}},
		{"dotted skill fails the grammar first", PluginKindToolProvider, Announcement{Tools: []Tool{goodTool("nexus.skill.load")}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name", Name: "nexus.skill.load"}}},
		{"reserved, as the HTTP door", PluginKindToolProvider, Announcement{Tools: []Tool{goodTool("delegate_task"), goodTool("skill")}},
			[]refusal.Problem{{Code: CodeReservedNamespace, Path: "tools[0].name", Name: "delegate_task"}}},
		{"reserved canonical", PluginKindMemory, Announcement{Tools: []Tool{goodTool("nexus.tools.call")}},
			[]refusal.Problem{{Code: CodeReservedNamespace, Path: "tools[0].name", Name: "nexus.tools.call"}}},
		{"bounds, as the HTTP door", PluginKindToolProvider, Announcement{Documents: make([]Document, MaxDocuments+1)},
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "documents"}}},
		{"memory", PluginKindMemory, Announcement{Tools: memoryTools()}, nil},
		{"memory in another order", PluginKindMemory, Announcement{Tools: append(memoryTools()[3:], memoryTools()[:3]...)}, nil},
		{"memory missing one", PluginKindMemory, Announcement{Tools: memoryTools()[:5]},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools", Name: "memory_delete"}}},
		{"memory with none", PluginKindMemory, Announcement{}, []refusal.Problem{
			{Code: CodeInvalidAnnouncement, Path: "tools", Name: "memory_ls"},
			{Code: CodeInvalidAnnouncement, Path: "tools", Name: "memory_read"},
			{Code: CodeInvalidAnnouncement, Path: "tools", Name: "memory_grep"},
			{Code: CodeInvalidAnnouncement, Path: "tools", Name: "memory_write"},
			{Code: CodeInvalidAnnouncement, Path: "tools", Name: "memory_edit"},
			{Code: CodeInvalidAnnouncement, Path: "tools", Name: "memory_delete"},
		}},
		{"memory with an extra tool", PluginKindMemory, Announcement{Tools: append(memoryTools(), goodTool("lookup"))},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[6].name", Name: "lookup"}}},
		{"memory with skill", PluginKindMemory, Announcement{Tools: append(memoryTools(), goodTool("skill"))},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[6].name", Name: "skill"}}},
		{"memory twice", PluginKindMemory, Announcement{Tools: append(memoryTools(), goodTool("memory_ls"))},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[6].name", Name: "memory_ls"}}},
		{"memory with documents", PluginKindMemory, Announcement{Tools: memoryTools(), Documents: []Document{{Name: "a", Description: "b"}}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents"}}},
		{"unknown kind", "toolbox", Announcement{}, []refusal.Problem{{Code: CodeInvalidAnnouncement}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := ValidatePlugin(tt.kind, tt.a)
			if diff := cmp.Diff(tt.want, problemsOf(r)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHTTPDoorAdmitsWhatPluginsMayNot pins the one difference between the two callers.
func TestHTTPDoorAdmitsWhatPluginsMayNot(t *testing.T) {
	t.Parallel()
	a := Announcement{Tools: []Tool{goodTool("skill"), goodTool("models_list")}}
	if r := Validate(a); r != nil {
		t.Errorf("Validate refused: %+v", r)
	}
	if r := ValidatePlugin(PluginKindToolProvider, a); r == nil || r.Code != CodeInvalidAnnouncement || nameOf(r) != "skill" {
		t.Errorf("ValidatePlugin = %+v", r)
	}
}
