package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/announce"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

func managed(name string, workspaces ...string) plugins.ManagedExecutor {
	return plugins.ManagedExecutor{RegistrationKey: "plugin:" + name, DisplayName: "plugin " + name,
		ManagedBy: map[string]string{"plugin": name}, Workspaces: workspaces}
}

// TestManagedExecutorIdentity pins docs/plugins.md#what-the-host-checks over the real store: one
// executor per workspace the plugin serves, the same public id on every load, reactivated after a
// revocation, marked not eligible where the catalog no longer names the workspace, and an unknown
// workspace refused.
func TestManagedExecutorIdentity(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv, _ := openServer(t, d, Options{})
			ctx := context.Background()
			st := srv.Store()
			ops := &store.Workspace{PublicID: store.NewPublicID(), Handle: "ops", Name: "Ops", CreatedAt: 1}
			if err := st.Write(ctx, func(tx *store.Tx) error { return store.InsertWorkspace(ctx, tx, ops) }); err != nil {
				t.Fatal(err)
			}
			p := srv.pluginPlane
			home, err := p.EnsureManaged(ctx, managed("mem"))
			if err != nil {
				t.Fatal(err)
			}
			rows, err := store.ManagedExecutorsOf(ctx, st.Reader(), "mem")
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[0].PublicID != home || rows[1].WorkspaceID != ops.ID || rows[0].Kind != "tool_provider" || rows[0].DisplayName != "plugin mem" {
				t.Fatalf("rows %+v, home %s", rows, home)
			}
			again, err := p.EnsureManaged(ctx, managed("mem"))
			if err != nil || again != home {
				t.Fatalf("second load: %s %v, want %s", again, err, home)
			}
			if err := p.Revoke(ctx, home); err != nil {
				t.Fatal(err)
			}
			e, _ := store.ExecutorByPublicID(ctx, st.Reader(), home)
			if e.Status != store.ExecutorRevoked {
				t.Fatalf("after Revoke: %s", e.Status)
			}
			back, err := p.EnsureManaged(ctx, managed("mem", "default"))
			if err != nil || back != home {
				t.Fatalf("reload: %s %v, want %s", back, err, home)
			}
			e, _ = store.ExecutorByPublicID(ctx, st.Reader(), home)
			m, _ := store.ManagementOf(ctx, st.Reader(), e.ID)
			if e.Status != store.ExecutorActive || m.ManagedBy != "mem" || !m.Eligible {
				t.Fatalf("reactivated: %+v %+v", e, m)
			}
			m, _ = store.ManagementOf(ctx, st.Reader(), rows[1].ID)
			if m.Eligible {
				t.Fatal("the ops row stayed eligible after the catalog named default only")
			}
			if _, err := p.EnsureManaged(ctx, managed("mem", "ghost")); err == nil {
				t.Fatal("an unknown workspace was accepted")
			}
			// Announce reaches every row through the door's write.
			a := announce.Announcement{Tools: []announce.Tool{{Name: "memory_read", EffectProfile: announce.Announced(announce.EffectReadOnly)}}}
			if err := p.Announce(ctx, home, a); err != nil {
				t.Fatal(err)
			}
			ok, err := store.Announces(ctx, st.Reader(), e.ID, "memory_read")
			if err != nil || !ok {
				t.Fatalf("announced: %v %v", ok, err)
			}
		})
	}
}

func TestScopesOf(t *testing.T) {
	t.Parallel()
	ws, conv, user := "01900000-0000-7000-8000-000000000001", "01900000-0000-7000-8000-000000000002", "01900000-0000-7000-8000-000000000003"
	raw := json.RawMessage(`{"bindings":[{"name":"workspace","scope":"workspace","access":"read_write","workspace_public_id":"` + ws +
		`"},{"name":"conversation","scope":"conversation","access":"read","conversation_public_id":"` + conv +
		`"},{"name":"user","scope":"user","access":"read_write","user_public_id":"` + user + `"}]}`)
	got, err := scopesOf(raw, ws)
	if err != nil {
		t.Fatal(err)
	}
	want := []memsdk.Scope{
		{Binding: "workspace", Kind: memsdk.ScopeWorkspace, OwnerID: ws, Access: memsdk.AccessReadWrite, WorkspaceID: ws},
		{Binding: "conversation", Kind: memsdk.ScopeConversation, OwnerID: conv, Access: memsdk.AccessRead, WorkspaceID: ws},
		{Binding: "user", Kind: memsdk.ScopeUser, OwnerID: user, Access: memsdk.AccessReadWrite, WorkspaceID: ws},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	if _, err := scopesOf(json.RawMessage(`[`), ws); err == nil {
		t.Fatal("a malformed scope was read")
	}
}

func TestCommitJSON(t *testing.T) {
	t.Parallel()
	title := "echo (2×)"
	cases := []struct {
		name string
		body plugins.CommitBody
		want string
	}{
		{"text", plugins.CommitBody{Outcome: plugins.OutcomeCompleted, Content: json.RawMessage(`"hi"`), Title: &title, IsError: true},
			`{"claim_token":"nxc_t","content":"hi","is_error":true,"outcome":"completed","title":"echo (2×)"}`},
		{"blank, structured null kept", plugins.CommitBody{Outcome: plugins.OutcomeCompleted, StructuredContent: json.RawMessage(`null`)},
			`{"claim_token":"nxc_t","outcome":"completed","structured_content":null}`},
		{"failed carries its detail as text", plugins.CommitBody{Outcome: plugins.OutcomeFailed, FailureDetail: "plugin x does not serve y"},
			`{"claim_token":"nxc_t","content":"plugin x does not serve y","outcome":"failed"}`},
		{"no outcome is completed", plugins.CommitBody{Metadata: json.RawMessage(`{"a":1}`)},
			`{"claim_token":"nxc_t","metadata":{"a":1},"outcome":"completed"}`},
	}
	for _, c := range cases {
		got, err := commitJSON("nxc_t", c.body)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %s %v, want %s", c.name, got, err, c.want)
		}
	}
}

func TestInboxCursor(t *testing.T) {
	t.Parallel()
	if got := decodeInboxCursor("", 2); len(got) != 2 || got[0] != "" || got[1] != "" {
		t.Fatalf("empty cursor: %q", got)
	}
	if got := decodeInboxCursor("not base64!", 2); len(got) != 2 || got[0] != "" {
		t.Fatalf("a foreign cursor restarts the pages: %q", got)
	}
	raw, _ := json.Marshal([]string{"abc", inboxDone})
	enc := base64URL(raw)
	if got := decodeInboxCursor(enc, 2); got[0] != "abc" || got[1] != inboxDone {
		t.Fatalf("round trip: %q", got)
	}
	if got := decodeInboxCursor(enc, 3); got[0] != "" {
		t.Fatalf("a cursor of another group size restarts: %q", got)
	}
}

// TestClaimOf reads a door's claim answer for the host.
func TestClaimOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := claimOf(claimAnswer(`{"kind":"pure"`, "2026-01-02T03:04:35.000Z"), now); err == nil {
		t.Fatal("a malformed effect profile was read")
	}
	if _, err := claimOf(claimAnswer(`null`, "soon"), now); err == nil {
		t.Fatal("a malformed deadline was read")
	}
	c, err := claimOf(claimAnswer(`{"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"none","reconciliation":"lookup","timeout_ms":60000}`,
		"2026-01-02T03:04:35.000Z"), now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Token != "nxc_t" || c.ToolName != "example_control" || c.EffectProfile == nil || c.EffectProfile.Idempotency != announce.IdempotencyNone ||
		!c.DeadlineAt.Equal(now.Add(30*time.Second)) || c.ToolCallID != "call_1" || c.ConversationID != "" {
		t.Fatalf("claim %+v", c)
	}
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// claimAnswer is a door's claim answer with this effect profile and deadline.
func claimAnswer(profile, deadline string) *executors.ClaimAnswer {
	call := "call_1"
	return &executors.ClaimAnswer{
		Task: &executors.Row{RunPublicID: "01900000-0000-7000-8000-000000000010", WorkspacePublicID: "01900000-0000-7000-8000-000000000001",
			TaskKey: "r2t0", ToolName: "example_control", ToolInput: json.RawMessage(`{"mode":"sleep"}`), ToolCallID: &call,
			EffectProfile: json.RawMessage(profile)},
		Claim: executors.ClaimDoc{ClaimToken: "nxc_t", Generation: 1, DeadlineAt: deadline},
	}
}
