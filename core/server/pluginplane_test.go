package server

import (
	"context"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/announce"
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
