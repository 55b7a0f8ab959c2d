package profiles_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/profiles/profilestest"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// benchRunnerTools is the largest announcement a Runner may make (announce.MaxTools).
const benchRunnerTools = 512

// BenchmarkProfile measures, on each store, over the live kernel registry:
//   - put: a replacement with a typical profile (validate, compile, one write transaction);
//   - read-rows: the raw reads acceptance makes (the agent, the profile row, the Runner row with
//     a 512-tool announcement), the floor for the next one;
//   - current+accept: the same reads decoded, the stored set compiled, and the profile frozen
//     with all 512 tools imported (qualified where they collide), as a turn's acceptance does.
func BenchmarkProfile(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			s := storetest.Open(b, d)
			ctx := context.Background()
			c, err := declare.New(registry.New())
			if err != nil {
				b.Fatal(err)
			}
			svc, err := profiles.New(profiles.Options{Store: s, Compiler: c, Models: model.MustBuiltin()})
			if err != nil {
				b.Fatal(err)
			}
			agent := benchAgent(b, s)
			box := profilestest.Executor(b, s, agent.WorkspaceID, store.ExecutorRunner, runner51, "build-box")
			profilestest.Announce(b, s, box, benchAnnouncement(benchRunnerTools))
			cfg := obj(b, example111)
			if _, err := svc.PutConfiguration(ctx, agent, cfg); err != nil {
				b.Fatal(err)
			}

			b.Run("put", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := svc.PutConfiguration(ctx, agent, cfg); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("read-rows", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := store.AgentOf(ctx, s.Reader(), agent.ID); err != nil {
						b.Fatal(err)
					}
					if _, err := store.AgentProfileOf(ctx, s.Reader(), agent.ID); err != nil {
						b.Fatal(err)
					}
					if rows, err := store.AnnouncedExecutorsOf(ctx, s.Reader(), agent.WorkspaceID, []string{runner51}); err != nil || len(rows) != 1 {
						b.Fatal(err)
					}
				}
			})
			b.Run("current+accept", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p, err := svc.Current(ctx, s.Reader(), agent.ID)
					if err != nil {
						b.Fatal(err)
					}
					f, err := svc.Accept(ctx, s.Reader(), p, profiles.Acceptance{Selection: runner51})
					if err != nil {
						b.Fatal(err)
					}
					if f.ToolDefinitions.Len() < benchRunnerTools {
						b.Fatalf("%d tools frozen", f.ToolDefinitions.Len())
					}
				}
			})
		})
	}
}

func benchAgent(b *testing.B, s *store.Store) profiles.Agent {
	b.Helper()
	ctx := context.Background()
	var agent profiles.Agent
	err := s.Write(ctx, func(tx *store.Tx) error {
		u := &store.User{PublicID: store.NewPublicID(), Handle: "u", DisplayName: "U"}
		if err := store.InsertUser(ctx, tx, u); err != nil {
			return err
		}
		ws := &store.Workspace{PublicID: store.NewPublicID(), Handle: "w", Name: "W"}
		if err := store.InsertWorkspace(ctx, tx, ws); err != nil {
			return err
		}
		a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: ws.ID, Handle: "bot", DisplayName: "Bot", StewardUserID: u.ID}
		if err := store.InsertAgent(ctx, tx, a); err != nil {
			return err
		}
		agent = profiles.Agent{ID: a.ID, WorkspaceID: ws.ID}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return agent
}

// benchAnnouncement is n model-facing tools with realistic descriptions and schemas; the
// first is named read, as the route expects (docs/api.md#agent-profiles).
func benchAnnouncement(n int) string {
	items := make([]string, n)
	for i := range items {
		name := fmt.Sprintf("tool_%03d", i)
		if i == 0 {
			name = "read"
		}
		items[i] = `{"name":"` + name + `","effect_profile":` + profilestest.ReadOnly +
			`,"description":"Does step ` + name + ` of the build on this machine and reports what changed.",` +
			`"input_schema":{"type":"object","properties":{"path":{"type":"string","description":"A path under the workspace."},"dry_run":{"type":"boolean"}},"required":["path"]}}`
	}
	return `{"tools":[` + strings.Join(items, ",") + `],"environment":{"os":"linux"}}`
}
