package memorypostgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	memorypostgres "github.com/nexuskernel/nexus/providers/memory-postgres"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"no dsn":              `{}`,
		"schema uppercase":    `{"dsn":"postgres://x/y","schema":"Nexus"}`,
		"schema injection":    `{"dsn":"postgres://x/y","schema":"a; DROP TABLE x"}`,
		"schema too long":     `{"dsn":"postgres://x/y","schema":"a123456789012345678901234567890123456789012345678901234567890123"}`,
		"bad duration":        `{"dsn":"postgres://x/y","statement_timeout":"soon"}`,
		"negative duration":   `{"dsn":"postgres://x/y","conn_max_lifetime":"-1s"}`,
		"duration not string": `{"dsn":"postgres://x/y","statement_timeout":5}`,
		"negative pool":       `{"dsn":"postgres://x/y","max_open_conns":-1}`,
		"unknown field":       `{"dsn":"postgres://x/y","scheme":"x"}`,
	} {
		_, err := memorypostgres.Configure(t.Context(), plugin.Config{Raw: []byte(raw)})
		if !errors.Is(err, plugin.ErrConfigInvalid) {
			t.Errorf("%s: %v, want plugin.ErrConfigInvalid", name, err)
		}
	}
}

// TestUnreachable: a database that does not answer is a start the host retries, not a refusal.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := memorypostgres.Configure(ctx, plugin.Config{Raw: []byte(`{"dsn":"postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}`)})
	if !errors.Is(err, plugin.ErrUnavailable) || errors.Is(err, plugin.ErrConfigInvalid) {
		t.Errorf("unreachable database: %v, want plugin.ErrUnavailable", err)
	}
	if !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("the store's own error is memory.ErrUnavailable: %v", err)
	}
}

// TestMigrationsIdempotent: a second open of the same schema applies nothing twice, and a
// closed store answers ErrUnavailable.
func TestMigrationsIdempotent(t *testing.T) {
	t.Parallel()
	cfg := memorypostgres.Config{DSN: dsn(t), Schema: freshSchema(t), MaxOpenConns: 2}
	for range 2 {
		s, err := memorypostgres.Open(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.DB().Get(&n, `SELECT count(*) FROM `+s.Schema()+`.schema_migrations`); err != nil || n != 2 {
			t.Errorf("migrations recorded: %d, %v", n, err)
		}
		_ = s.Close()
		if _, err := s.Ls(t.Context(), &memory.LsRequest{Scope: memory.Scope{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: "0193c2d4-5e6f-7a8b-9c0d-000000000002", Access: memory.AccessRead}}); !errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("closed store: %v", err)
		}
	}
}

// TestLegacyRowGetsAnID: a row written before ids were kept (migration 2) reads with no id, and
// its next write gives it one, which later writes keep.
func TestLegacyRowGetsAnID(t *testing.T) {
	t.Parallel()
	s, err := memorypostgres.Open(t.Context(), memorypostgres.Config{DSN: dsn(t), Schema: freshSchema(t), MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	scope := memory.Scope{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: "0193c2d4-5e6f-7a8b-9c0d-000000000003", Access: memory.AccessReadWrite}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.Write(t.Context(), &memory.WriteRequest{Scope: scope, Name: "old.md", Content: "v1", WrittenAt: at}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`UPDATE ` + s.Schema() + `.documents SET id = NULL`); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(t.Context(), &memory.ReadRequest{Scope: scope, Name: "old.md"})
	if err != nil || r.Entry.ID != "" {
		t.Fatalf("a legacy row reads id %q, %v", r.Entry.ID, err)
	}
	_, err = s.Write(t.Context(), &memory.WriteRequest{Scope: scope, Name: "old.md", Content: "v2", WrittenAt: at, Expect: &memory.Expect{ID: "", Version: 1}})
	if !errors.Is(err, memory.ErrStale) {
		t.Fatalf("a condition on a legacy row: %v", err)
	}
	w, err := s.Write(t.Context(), &memory.WriteRequest{Scope: scope, Name: "old.md", Content: "v2", WrittenAt: at})
	if err != nil || w.Entry.ID == "" {
		t.Fatalf("the next write: %+v %v", w, err)
	}
	r, err = s.Read(t.Context(), &memory.ReadRequest{Scope: scope, Name: "old.md"})
	if err != nil || r.Entry.ID != w.Entry.ID || r.Entry.Version != 2 {
		t.Fatalf("after the write: %+v %v", r, err)
	}
}
