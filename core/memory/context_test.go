package memory_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/memory"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// TestDefaultContext pins the wave-1 frozen configurations (docs/agent-tools.md#memory-and-skills)
// byte for byte.
func TestDefaultContext(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                    string
		conversation, hasPerson bool
		want                    string
	}{
		{"conversation-hosted", true, true, `{"bindings":[{"name":"conversation","scope":"conversation","access":"read_write"},{"name":"workspace","scope":"workspace","access":"read_write"},{"name":"user","scope":"user","access":"read_write"}]}`},
		{"standalone", false, true, `{"bindings":[{"name":"workspace","scope":"workspace","access":"read_write"},{"name":"user","scope":"user","access":"read_write"}]}`},
		{"conversation, no controlling person", true, false, `{"bindings":[{"name":"conversation","scope":"conversation","access":"read_write"},{"name":"workspace","scope":"workspace","access":"read_write"}]}`},
		{"standalone, no controlling person", false, false, `{"bindings":[{"name":"workspace","scope":"workspace","access":"read_write"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			raw, err := json.Marshal(memory.DefaultContext(c.conversation, c.hasPerson))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, string(raw)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			back, err := memory.ParseContext(raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(memory.DefaultContext(c.conversation, c.hasPerson), back); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if raw, _ := json.Marshal(memory.Context{}); string(raw) != `{"bindings":[]}` {
		t.Fatalf("no memory is %s, want bindings: []", raw)
	}
}

func TestParseContext(t *testing.T) {
	t.Parallel()
	const conv = "0193c2d4-5e6f-7a8b-9c0d-000000000001"
	valid := map[string]string{
		"no memory":              `{"bindings":[]}`,
		"read-only share":        `{"bindings":[{"name":"team","scope":"workspace","access":"read"}]}`,
		"another conversation":   `{"bindings":[{"name":"thread","scope":"conversation","access":"read","conversation_public_id":"` + conv + `"}]}`,
		"longest root":           `{"bindings":[{"name":"a0123456789012345678901234567890","scope":"user","access":"read"}]}`,
		"root with _ and -":      `{"bindings":[{"name":"my_team-1","scope":"workspace","access":"read_write"}]}`,
		"default roots reversed": `{"bindings":[{"name":"user","scope":"user","access":"read_write"},{"name":"workspace","scope":"workspace","access":"read_write"}]}`,
	}
	for name, raw := range valid {
		if _, err := memory.ParseContext([]byte(raw)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	invalid := map[string]string{
		"not JSON":                             `{"bindings":`,
		"no bindings":                          `{}`,
		"null bindings":                        `{"bindings":null}`,
		"unknown key":                          `{"bindings":[],"extra":1}`,
		"unknown binding key":                  `{"bindings":[{"name":"w","scope":"workspace","access":"read","x":1}]}`,
		"root uppercase":                       `{"bindings":[{"name":"Workspace","scope":"workspace","access":"read"}]}`,
		"root starting with a digit":           `{"bindings":[{"name":"1w","scope":"workspace","access":"read"}]}`,
		"root too long":                        `{"bindings":[{"name":"a01234567890123456789012345678901","scope":"workspace","access":"read"}]}`,
		"root repeated":                        `{"bindings":[{"name":"w","scope":"workspace","access":"read"},{"name":"w","scope":"user","access":"read"}]}`,
		"unknown scope":                        `{"bindings":[{"name":"w","scope":"team","access":"read"}]}`,
		"unknown access":                       `{"bindings":[{"name":"w","scope":"workspace","access":"write"}]}`,
		"conversation id on a workspace root":  `{"bindings":[{"name":"w","scope":"workspace","access":"read","conversation_public_id":"` + conv + `"}]}`,
		"conversation id not canonical":        `{"bindings":[{"name":"c","scope":"conversation","access":"read","conversation_public_id":"0193C2D4-5E6F-7A8B-9C0D-000000000001"}]}`,
		"conversation id not a UUID":           `{"bindings":[{"name":"c","scope":"conversation","access":"read","conversation_public_id":"x"}]}`,
		"bindings not a list":                  `{"bindings":{}}`,
		"binding access missing (empty value)": `{"bindings":[{"name":"w","scope":"workspace"}]}`,
	}
	for name, raw := range invalid {
		if _, err := memory.ParseContext([]byte(raw)); !errors.Is(err, memory.ErrContextInvalid) {
			t.Errorf("%s: error %v, want ErrContextInvalid", name, err)
		}
	}
}

// TestProject pins the executor's projection of resolved bindings
// (docs/agent-tools.md#memory-and-skills).
func TestProject(t *testing.T) {
	t.Parallel()
	const (
		conv = "0193c2d4-5e6f-7a8b-9c0d-000000000001"
		ws   = "0193c2d4-5e6f-7a8b-9c0d-000000000002"
		user = "0193c2d4-5e6f-7a8b-9c0d-000000000003"
	)
	scopes := []memsdk.Scope{
		{Binding: "conversation", Kind: memsdk.ScopeConversation, OwnerID: conv, Access: memsdk.AccessRead, WorkspaceID: ws},
		{Binding: "workspace", Kind: memsdk.ScopeWorkspace, OwnerID: ws, Access: memsdk.AccessReadWrite, WorkspaceID: ws},
		{Binding: "user", Kind: memsdk.ScopeUser, OwnerID: user, Access: memsdk.AccessReadWrite, WorkspaceID: ws},
	}
	raw, err := json.Marshal(memory.Project(scopes))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"bindings":[` +
		`{"name":"conversation","scope":"conversation","access":"read","conversation_public_id":"` + conv + `"},` +
		`{"name":"workspace","scope":"workspace","access":"read_write","workspace_public_id":"` + ws + `"},` +
		`{"name":"user","scope":"user","access":"read_write","user_public_id":"` + user + `"}]}`
	if diff := cmp.Diff(want, string(raw)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if raw, _ := json.Marshal(memory.Project(nil)); string(raw) != `{"bindings":[]}` {
		t.Fatalf("empty projection %s", raw)
	}
	if got := string(memory.Project(scopes).Encode()); got != want {
		t.Fatalf("Encode %s", got)
	}
	back, err := memory.ParseProjection([]byte(want), ws)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(scopes, back); diff != "" {
		t.Fatalf("ParseProjection (-want +got):\n%s", diff)
	}
	if _, err := memory.ParseProjection([]byte(`[`), ws); err == nil {
		t.Fatal("a malformed scope was read")
	}
}

func TestMemoryPrincipal(t *testing.T) {
	t.Parallel()
	person := memory.Principal{Kind: memory.PrincipalUser, PublicID: "p"}
	agentCreator := memory.Principal{Kind: memory.PrincipalAgent, PublicID: "a"}
	cases := []struct {
		name      string
		answering string
		createdBy memory.Principal
		want      memory.Principal
	}{
		{"conversation-hosted: the answering agent", "ans", person, memory.Principal{Kind: memory.PrincipalAgent, PublicID: "ans"}},
		{"standalone by an agent: that agent", "a", agentCreator, agentCreator},
		{"standalone by a person: that person", "", person, person},
	}
	for _, c := range cases {
		if got := memory.MemoryPrincipal(c.answering, c.createdBy); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
