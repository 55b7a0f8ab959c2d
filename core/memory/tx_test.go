package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

var errRollback = errors.New("the caller rolls back")

// TestJoinsCallerTransaction: a mutation under WithTx commits and rolls back with the caller's
// transaction, reads inside it see its writes, and a refusal inside it leaves the transaction
// usable (PostgreSQL aborts a transaction on any failed statement).
func TestJoinsCallerTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		s := memory.New(db)
		ws := memorytest.Workspace
		engine := &memsdk.Engine{Provider: s, Now: func() time.Time { return memorytest.T0 }}
		exists := func(name string) bool {
			t.Helper()
			_, err := s.Read(ctx, &memsdk.ReadRequest{Scope: ws, Name: name})
			if err != nil && !errors.Is(err, memsdk.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}

		// Rolled back with the caller.
		err := db.Write(ctx, func(tx *store.Tx) error {
			in := memory.WithTx(ctx, tx)
			res, err := engine.Run(in, "memory_write", json.RawMessage(`{"path":"workspace/draft.md","content":"x"}`), []memsdk.Scope{ws}, memsdk.RunOptions{})
			if err != nil || res.IsError {
				t.Fatalf("write in the transaction: %+v %v", res, err)
			}
			if _, err := s.Read(in, &memsdk.ReadRequest{Scope: ws, Name: "draft.md"}); err != nil {
				t.Errorf("a read in the transaction misses its own write: %v", err)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
		if exists("draft.md") {
			t.Fatal("a rolled-back write is visible")
		}

		// Committed with the caller, refusals inside included.
		err = db.Write(ctx, func(tx *store.Tx) error {
			in := memory.WithTx(ctx, tx)
			for i := range memsdk.MaxDocumentsPerAnchor {
				if _, err := s.Write(in, &memsdk.WriteRequest{Scope: ws, Name: fmt.Sprintf("d%02d", i), Content: "x", WrittenAt: memorytest.T0}); err != nil {
					return err
				}
			}
			if _, err := s.Write(in, &memsdk.WriteRequest{Scope: ws, Name: "one-more", Content: "x", WrittenAt: memorytest.T0}); !errors.Is(err, memsdk.ErrFull) {
				t.Errorf("65th create in the transaction: %v", err)
			}
			if _, err := s.Edit(in, &memsdk.EditRequest{Scope: ws, Name: "missing", OldText: "a", NewText: "b", WrittenAt: memorytest.T0}); !errors.Is(err, memsdk.ErrNotFound) {
				t.Errorf("edit of a missing document in the transaction: %v", err)
			}
			if _, err := s.Edit(in, &memsdk.EditRequest{Scope: ws, Name: "d00", OldText: "zzz", NewText: "b", WrittenAt: memorytest.T0}); !errors.Is(err, memsdk.ErrEditNotFound) {
				t.Errorf("edit without its text in the transaction: %v", err)
			}
			// The transaction still works after the refusals.
			_, err := s.Edit(in, &memsdk.EditRequest{Scope: ws, Name: "d00", OldText: "x", NewText: "y", WrittenAt: memorytest.T0})
			return err
		})
		if err != nil {
			t.Fatalf("commit after refusals: %v", err)
		}
		got, err := s.Read(ctx, &memsdk.ReadRequest{Scope: ws, Name: "d00"})
		if err != nil || got.Content != "y" || got.Entry.Version != 2 {
			t.Fatalf("d00 after commit: %+v %v", got, err)
		}
		ls, err := s.Ls(ctx, &memsdk.LsRequest{Scope: ws})
		if err != nil || len(ls.Entries) != memsdk.MaxDocumentsPerAnchor {
			t.Fatalf("after commit: %d documents (%v)", len(ls.Entries), err)
		}
	})
}

// TestStoreFailureIsUnavailable: a store that cannot reach its database answers ErrUnavailable,
// which the Engine turns into memory_unavailable.
func TestStoreFailureIsUnavailable(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		s := memory.New(db)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		ws := memorytest.Workspace
		checks := map[string]error{}
		_, checks["ls"] = s.Ls(ctx, &memsdk.LsRequest{Scope: ws})
		_, checks["read"] = s.Read(ctx, &memsdk.ReadRequest{Scope: ws, Name: "a"})
		_, checks["grep"] = s.Grep(ctx, &memsdk.GrepRequest{Scope: ws, Pattern: "a", Limit: 1})
		_, checks["write"] = s.Write(ctx, &memsdk.WriteRequest{Scope: ws, Name: "a", Content: "x", WrittenAt: memorytest.T0})
		_, checks["edit"] = s.Edit(ctx, &memsdk.EditRequest{Scope: ws, Name: "a", OldText: "x", NewText: "y", WrittenAt: memorytest.T0})
		_, checks["delete"] = s.Delete(ctx, &memsdk.DeleteRequest{Scope: ws, Name: "a"})
		for verb, err := range checks {
			if !errors.Is(err, memsdk.ErrUnavailable) {
				t.Errorf("%s on a closed database: %v, want ErrUnavailable", verb, err)
			}
		}
		engine := &memsdk.Engine{Provider: s}
		res, err := engine.Run(ctx, "memory_write", json.RawMessage(`{"path":"workspace/a","content":"x"}`), []memsdk.Scope{ws}, memsdk.RunOptions{})
		if err != nil || res.Text != "memory_unavailable: the memory store could not complete this call" || !res.IsError {
			t.Errorf("engine over a closed database: %+v %v", res, err)
		}
	})
}

// TestBytePrefixes: a listing prefix is a literal byte prefix, even one that ends inside a
// character or holds bytes no name can contain (the database compares characters; the store
// must still answer byte for byte, and never send invalid text to PostgreSQL).
func TestBytePrefixes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		s := memory.New(db)
		ws := memorytest.Workspace
		for _, name := range []string{"na.md", "né.md", "nê.md", "n%_.md"} {
			if _, err := s.Write(ctx, &memsdk.WriteRequest{Scope: ws, Name: name, Content: "x", WrittenAt: memorytest.T0}); err != nil {
				t.Fatal(err)
			}
		}
		for prefix, want := range map[string][]string{
			"n\xc3":     {"né.md", "nê.md"},
			"n\xc3\xa9": {"né.md"},
			"\xff":      nil,
			"n\xffa":    nil,
			"n%_":       {"n%_.md"},
			"n%":        {"n%_.md"},
			"":          {"n%_.md", "na.md", "né.md", "nê.md"},
		} {
			resp, err := s.Ls(ctx, &memsdk.LsRequest{Scope: ws, NamePrefix: prefix})
			if err != nil {
				t.Fatalf("ls %q: %v", prefix, err)
			}
			var got []string
			for _, e := range resp.Entries {
				got = append(got, e.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("ls %q = %q, want %q", prefix, got, want)
			}
			g, err := s.Grep(ctx, &memsdk.GrepRequest{Scope: ws, NamePrefix: prefix, Pattern: "x", Limit: 10})
			if err != nil || len(g.Matches) != len(want) {
				t.Errorf("grep under %q: %+v %v, want %d matches", prefix, g, err, len(want))
			}
		}
	})
}
