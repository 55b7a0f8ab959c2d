package store_test

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// world is one workspace with a user, an agent and executors, written through the repositories.
type world struct {
	ws, otherWS, agent int64
}

func newWorld(t *testing.T, s *store.Store) world {
	t.Helper()
	ctx := context.Background()
	var w world
	err := s.Write(ctx, func(tx *store.Tx) error {
		u := &store.User{PublicID: store.NewPublicID(), Handle: "u", DisplayName: "U"}
		if err := store.InsertUser(ctx, tx, u); err != nil {
			return err
		}
		for i, id := range []*int64{&w.ws, &w.otherWS} {
			ws := &store.Workspace{PublicID: store.NewPublicID(), Handle: []string{"a", "b"}[i], Name: "W"}
			if err := store.InsertWorkspace(ctx, tx, ws); err != nil {
				return err
			}
			*id = ws.ID
		}
		a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: w.ws, Handle: "bot", DisplayName: "Bot", StewardUserID: u.ID}
		if err := store.InsertAgent(ctx, tx, a); err != nil {
			return err
		}
		w.agent = a.ID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w world) executor(t *testing.T, s *store.Store, ws int64, kind, name string) *store.Executor {
	t.Helper()
	e := &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: ws, Kind: kind, DisplayName: name, Status: store.ExecutorActive}
	if err := s.Write(context.Background(), func(tx *store.Tx) error { return store.InsertExecutor(context.Background(), tx, e) }); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAgentProfileRepository(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newWorld(t, s)
		if _, err := store.AgentProfileOf(ctx, s.Reader(), w.agent); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unwritten profile: err = %v, want ErrNotFound", err)
		}
		// Bytes a jsonb column would reorder and re-space come back exactly.
		p := &store.AgentProfile{AgentID: w.agent, ToolDefinitions: `[{"type":"function","name":"z","a":1}]`,
			KernelTools: `["nexus.graph.wait"]`, RunnerExecutorPublicIDs: `[]`,
			RunnerToolNames: sql.NullString{String: `[]`, Valid: true}, ApprovalMode: sql.NullString{String: "rules", Valid: true},
			ApprovalRules: sql.NullString{String: `[{"verdict":"allow","tool":"wait"}]`, Valid: true},
			Instructions:  sql.NullString{String: "Be brief. \u00e9\u2028", Valid: true}, UpdatedAt: 7}
		for want := int64(1); want <= 3; want++ {
			if err := s.Write(ctx, func(tx *store.Tx) error { return store.PutAgentProfile(ctx, tx, p) }); err != nil {
				t.Fatal(err)
			}
			if p.Revision != want {
				t.Fatalf("revision after put %d = %d", want, p.Revision)
			}
		}
		got, err := store.AgentProfileOf(ctx, s.Reader(), w.agent)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(p, got); d != "" {
			t.Fatalf("read back (-put +got):\n%s", d)
		}
		// A whole replacement clears what it leaves out.
		q := &store.AgentProfile{AgentID: w.agent, ToolDefinitions: `[]`, KernelTools: `[]`, RunnerExecutorPublicIDs: `[]`, UpdatedAt: 8}
		if err := s.Write(ctx, func(tx *store.Tx) error { return store.PutAgentProfile(ctx, tx, q) }); err != nil {
			t.Fatal(err)
		}
		got, _ = store.AgentProfileOf(ctx, s.Reader(), w.agent)
		q.Revision = 4
		if d := cmp.Diff(q, got); d != "" {
			t.Fatalf("after replacement (-put +got):\n%s", d)
		}
		// The store refuses an approval mode outside the vocabulary and an unknown agent.
		bad := *q
		bad.ApprovalMode = sql.NullString{String: "yolo", Valid: true}
		if err := s.Write(ctx, func(tx *store.Tx) error { return store.PutAgentProfile(ctx, tx, &bad) }); err == nil {
			t.Fatal("approval_mode yolo was stored")
		}
		bad = *q
		bad.AgentID = w.agent + 1000
		if err := s.Write(ctx, func(tx *store.Tx) error { return store.PutAgentProfile(ctx, tx, &bad) }); err == nil {
			t.Fatal("a profile of no agent was stored")
		}
		a, err := store.AgentOf(ctx, s.Reader(), w.agent)
		if err != nil || a.WorkspaceID != w.ws || a.Handle != "bot" {
			t.Fatalf("AgentOf = %+v, %v", a, err)
		}
		if _, err := store.AgentOf(ctx, s.Reader(), w.agent+1000); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown agent: %v", err)
		}
	})
}

func TestAnnouncementRepository(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newWorld(t, s)
		box := w.executor(t, s, w.ws, store.ExecutorRunner, "box")
		quiet := w.executor(t, s, w.ws, store.ExecutorRunner, "quiet")
		pool := w.executor(t, s, w.ws, store.ExecutorToolProvider, "pool")
		foreign := w.executor(t, s, w.otherWS, store.ExecutorRunner, "foreign")
		if _, err := store.AnnouncementOf(ctx, s.Reader(), box.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("never announced: %v", err)
		}
		a := &store.Announcement{ExecutorID: box.ID, Tools: `[{"name":"read","description":"<b>"}]`, Environment: `{"os":"linux"}`,
			Documents: `[]`, AnnouncedAt: 5}
		put := func(a *store.Announcement) {
			t.Helper()
			if err := s.Write(ctx, func(tx *store.Tx) error { return store.PutAnnouncement(ctx, tx, a) }); err != nil {
				t.Fatal(err)
			}
		}
		put(a)
		put(&store.Announcement{ExecutorID: foreign.ID, Tools: `[]`, Environment: `{}`, Documents: `[]`, AnnouncedAt: 5})
		// A replacement is whole.
		a = &store.Announcement{ExecutorID: box.ID, Tools: `[]`, Environment: `{}`, Documents: `[{"name":"d","description":"x"}]`, AnnouncedAt: 6}
		put(a)
		got, err := store.AnnouncementOf(ctx, s.Reader(), box.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(a, got); d != "" {
			t.Fatalf("announcement (-put +got):\n%s", d)
		}

		rows, err := store.AnnouncedExecutorsOf(ctx, s.Reader(), w.ws,
			[]string{box.PublicID, quiet.PublicID, pool.PublicID, foreign.PublicID, "01900000-0000-7000-8000-000000000099"})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].DisplayName < rows[j].DisplayName })
		var names []string
		for _, r := range rows {
			names = append(names, r.DisplayName+":"+r.Kind+":"+strings.TrimSpace(r.Tools.String))
		}
		// The foreign Runner and the unknown id yield nothing; quiet never announced.
		if d := cmp.Diff([]string{"box:runner:[]", "pool:tool_provider:", "quiet:runner:"}, names); d != "" {
			t.Fatalf("rows (-want +got):\n%s", d)
		}
		if !rows[0].AnnouncedAt.Valid || rows[0].AnnouncedAt.Int64 != 6 || rows[0].Documents.String != a.Documents || rows[2].AnnouncedAt.Valid {
			t.Fatalf("announcement columns: %+v / %+v", rows[0], rows[2])
		}
		if rows, err := store.AnnouncedExecutorsOf(ctx, s.Reader(), w.ws, nil); err != nil || len(rows) != 0 {
			t.Fatalf("no ids: %v, %v", rows, err)
		}
	})
}
