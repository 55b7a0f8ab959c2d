package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// malformedIDs are values a client can put where a public id or a task key goes: a 30,000-byte
// id (PostgreSQL's refusal would quote it whole), bytes that are not UTF-8 (a path's %ff%fe),
// U+0000 (%00), an id in upper case, and the empty string.
var malformedIDs = []string{
	strings.Repeat("a", 30_000),
	"\xff\xfe",
	"0190c0de-0000-7000-8000-00000000000\x00",
	"\x00",
	"0190C0DE-0000-7000-8000-000000000000",
	"",
}

// Every lookup by a public id or a task key answers a malformed one ErrNotFound without sending
// a statement: inside a PostgreSQL transaction a statement the server refused would abort the
// transaction, so the transaction's next statement proves that none was sent.
func TestMalformedIDsReachNoStatement(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		lookups := map[string]func(tx *store.Tx, bad string) error{
			"WorkspaceByPublicID": func(tx *store.Tx, bad string) error { _, err := store.WorkspaceByPublicID(ctx, tx, bad); return err },
			"UserByPublicID":      func(tx *store.Tx, bad string) error { _, err := store.UserByPublicID(ctx, tx, bad); return err },
			"AgentInWorkspace":    func(tx *store.Tx, bad string) error { _, err := store.AgentInWorkspace(ctx, tx, 1, bad); return err },
			"TokenOf": func(tx *store.Tx, bad string) error {
				_, err := store.TokenOf(ctx, tx, store.KindUser, 1, bad)
				return err
			},
			"AgentStewardPublicID": func(tx *store.Tx, bad string) error {
				_, err := store.AgentStewardPublicID(ctx, tx, bad)
				return err
			},
			"MemoryDocumentAt": func(tx *store.Tx, bad string) error {
				_, err := store.MemoryDocumentAt(ctx, tx, "workspace", bad, "notes.md", false)
				return err
			},
			"CompleteUploadByPublicID": func(tx *store.Tx, bad string) error {
				_, err := store.CompleteUploadByPublicID(ctx, tx, bad)
				return err
			},
			"HistoryTurnByPublicID": func(tx *store.Tx, bad string) error {
				_, err := store.HistoryTurnByPublicID(ctx, tx, 1, bad)
				return err
			},
			"RunByPublicID": func(tx *store.Tx, bad string) error { _, err := store.RunByPublicID(ctx, tx, 1, bad); return err },
			"RunStanding":   func(tx *store.Tx, bad string) error { _, _, err := store.RunStanding(ctx, tx, 1, bad); return err },
			"ExecutorByPublicID": func(tx *store.Tx, bad string) error {
				_, err := store.ExecutorByPublicID(ctx, tx, bad)
				return err
			},
			"ConversationByPublicID": func(tx *store.Tx, bad string) error {
				_, err := store.ConversationByPublicID(ctx, tx, bad)
				return err
			},
			"RunnerServing": func(tx *store.Tx, bad string) error {
				_, err := store.RunnerServing(ctx, tx, 1, bad, "echo")
				return err
			},
			"TaskByKey": func(tx *store.Tx, bad string) error { _, err := store.TaskByKey(ctx, tx, 1, bad); return err },
			"LockTaskOfRun run": func(tx *store.Tx, bad string) error {
				_, _, _, err := store.LockTaskOfRun(ctx, tx, 1, bad, "fetch")
				return err
			},
			"LockTaskOfRun key": func(tx *store.Tx, bad string) error {
				_, _, _, err := store.LockTaskOfRun(ctx, tx, 1, store.NewPublicID(), bad)
				return err
			},
			"StandingHolds": func(tx *store.Tx, bad string) error {
				ok, err := store.StandingHolds(ctx, tx, store.Standing{WorkspacePublicID: bad, UserID: 1, Role: store.RoleMember})
				if err == nil && !ok {
					return store.ErrNotFound
				}
				return err
			},
		}
		for name, lookup := range lookups {
			for _, bad := range malformedIDs {
				if name == "StandingHolds" && bad == "" {
					continue // an empty reference names the workspace by handle
				}
				err := s.Write(ctx, func(tx *store.Tx) error {
					if err := lookup(tx, bad); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("%s(%.40q): %.200v, want ErrNotFound", name, bad, err)
					}
					var one int
					if err := tx.Get(ctx, &one, `SELECT 1`); err != nil || one != 1 {
						t.Errorf("%s(%.40q): the transaction's next statement: %v", name, bad, err)
					}
					return nil
				})
				if err != nil {
					t.Errorf("%s(%.40q): the transaction: %.200v", name, bad, err)
				}
			}
		}
		// A listing filtered by a malformed id is refused before its statement too.
		_, err := store.RunsOfWorkspace(ctx, s.Reader(), 1, store.RunFilter{ConversationPublicID: "\xff", Limit: 1})
		if !errors.Is(err, store.ErrMalformedID) {
			t.Errorf("RunsOfWorkspace by a malformed conversation id: %v, want ErrMalformedID", err)
		}
	})
}
