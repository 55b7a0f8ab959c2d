package profiles_test

import (
	"context"
	"testing"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/declare/declaretest"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The Runner ids of the worked examples.
const (
	runner51 = "01900000-0000-7000-8000-000000000051"
	runner52 = "01900000-0000-7000-8000-000000000052"
	runner53 = "01900000-0000-7000-8000-000000000053"
)

// env is a profile service over a fresh store: a workspace with an agent, and a second
// workspace.
type env struct {
	s       *store.Store
	svc     *profiles.Service
	c       *declare.Compiler
	agent   profiles.Agent
	other   profiles.Agent // an agent of the same workspace
	otherWS int64
}

func newEnv(t *testing.T, s *store.Store) *env {
	t.Helper()
	ctx := context.Background()
	c, err := declare.New(declaretest.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := profiles.New(profiles.Options{Store: s, Compiler: c, Models: model.MustBuiltin()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{s: s, svc: svc, c: c}
	err = s.Write(ctx, func(tx *store.Tx) error {
		u := &store.User{PublicID: store.NewPublicID(), Handle: "steward", DisplayName: "Steward"}
		if err := store.InsertUser(ctx, tx, u); err != nil {
			return err
		}
		var wsIDs [2]int64
		for i, h := range []string{"main", "other"} {
			ws := &store.Workspace{PublicID: store.NewPublicID(), Handle: h, Name: h}
			if err := store.InsertWorkspace(ctx, tx, ws); err != nil {
				return err
			}
			wsIDs[i] = ws.ID
		}
		e.otherWS = wsIDs[1]
		for i, ag := range []*profiles.Agent{&e.agent, &e.other} {
			a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: wsIDs[0], Handle: []string{"bot-a", "bot-b"}[i], DisplayName: "A", StewardUserID: u.ID}
			if err := store.InsertAgent(ctx, tx, a); err != nil {
				return err
			}
			*ag = profiles.Agent{ID: a.ID, WorkspaceID: wsIDs[0]}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func obj(t testing.TB, s string) jsonwire.Value {
	t.Helper()
	v, err := jsonwire.DecodeText(s)
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// put replaces the agent's profile with the configuration object cfg.
func (e *env) put(t *testing.T, agent profiles.Agent, cfg string) (*profiles.Configuration, error) {
	t.Helper()
	return e.svc.PutConfiguration(context.Background(), agent, obj(t, cfg))
}

func (e *env) mustPut(t *testing.T, cfg string) *profiles.Configuration {
	t.Helper()
	out, err := e.put(t, e.agent, cfg)
	if err != nil {
		t.Fatalf("put %s: %v", cfg, err)
	}
	return out
}

func readBack(t *testing.T, c *profiles.Configuration) string {
	t.Helper()
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func refusalOf(t *testing.T, err error) declaretest.Refused {
	t.Helper()
	return declaretest.RefusalOf(t, err)
}
