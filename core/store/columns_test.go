package store_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestTypedColumnsRoundTrip: every JSON-valued column the row types is stored as the compact JSON
// of its Go value (the bytes the API serves and the inbox compares) and read back as the same
// value; an absent one is SQL NULL and reads back nil.
func TestTypedColumnsRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := seedRun(t, s, 1)
		full := store.Task{TaskTrace: store.TaskTrace{RunID: r.ID, Key: "typed", Kind: "await_task", Status: "awaiting_input", OnFailure: "absorb",
			Lifetime: "turn", Wake: "auto", Visibility: "hidden", LineageRoot: "typed",
			AfterKeys: store.Strings{"k0", "k1"}, ClaimedBy: &store.Claimant{Kernel: true},
			Approval: &store.Approval{Origin: "human", DecidedBy: &store.Member{Kind: "user", PublicID: "u1"}, DecidedAt: "2025-01-01T00:00:00.000Z"}},
			Results: store.Strings{"k0"}, Options: store.Strings{"yes", "no"},
			Attachments:     store.Attachments{{PublicID: "a", URI: "nexus://uploads/a", Filename: "f.png", ContentType: "image/png", ByteSize: 3, SHA256: "ab"}},
			AnswerCalls:     store.AnswerCalls{{ID: "c1", Name: "read", Arguments: `{"p":1}`, ToolCallID: "c1", TaskKey: "r1t0"}},
			Usage:           &store.Usage{InputTokens: 10, OutputTokens: 2, CachedInputTokens: ptr(int64(0)), Cost: &store.Cost{Amount: "0.000100", Currency: "USD"}},
			Route:           &store.Route{Kind: "runner", RunnerExecutorPublicID: "e1", ToolName: "work"},
			AddressedMember: &store.AddressedMember{Role: "member", Member: store.Member{Kind: "user", PublicID: "u1"}},
			WaitSpec:        &store.WaitSpec{RunPublicID: "r", Task: "k0", TimeoutMS: 5},
			ResolvedBy:      &store.Member{Kind: "kernel"},
		}
		bare := store.Task{TaskTrace: store.TaskTrace{RunID: r.ID, Key: "bare", Kind: "tool_task", Status: "waiting", OnFailure: "absorb",
			Lifetime: "turn", Wake: "auto", Visibility: "hidden", LineageRoot: "bare"}}
		err := s.Write(ctx, func(tx *store.Tx) error {
			if err := store.InsertTask(ctx, tx, &full); err != nil {
				return err
			}
			return store.InsertTask(ctx, tx, &bare)
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []store.Task{full, bare} {
			got, err := store.TaskByID(ctx, s.Reader(), want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("read back\n%+v\nwritten\n%+v", *got, want)
			}
		}
		stored := map[string]string{
			"after_keys": `["k0","k1"]`, "claimed_by": `{"kernel":true}`, "results": `["k0"]`, "options": `["yes","no"]`,
			"approval":         `{"origin":"human","decided_by":{"kind":"user","public_id":"u1"},"decided_at":"2025-01-01T00:00:00.000Z"}`,
			"addressed_member": `{"role":"member","member":{"kind":"user","public_id":"u1"}}`,
			"resolved_by":      `{"kind":"kernel"}`, "wait_spec": `{"run_public_id":"r","task":"k0","timeout_ms":5}`,
			"usage":        `{"input_tokens":10,"output_tokens":2,"cached_input_tokens":0,"cost":{"amount":"0.000100","currency":"USD"}}`,
			"route":        `{"kind":"runner","runner_executor_public_id":"e1","tool_name":"work"}`,
			"answer_calls": `[{"id":"c1","name":"read","arguments":"{\"p\":1}","tool_call_id":"c1","task_key":"r1t0"}]`,
		}
		for col, want := range stored {
			var got *string
			if err := s.Reader().Get(ctx, &got, `SELECT `+col+` FROM tasks WHERE id = ?`, full.ID); err != nil {
				t.Fatal(err)
			}
			if got == nil || *got != want {
				t.Errorf("%s stored as %v, want %s", col, got, want)
			}
			if err := s.Reader().Get(ctx, &got, `SELECT `+col+` FROM tasks WHERE id = ?`, bare.ID); err != nil || got != nil {
				t.Errorf("an absent %s is stored as %v (%v), want NULL", col, got, err)
			}
		}
		// The inbox finds an ask by its addressee's stored bytes.
		held, err := store.InboxForMember(ctx, s.Reader(), "user", "u1", *full.AddressedMember, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(held) != 1 || held[0].ID != full.ID {
			t.Fatalf("the inbox holds %d rows, want the ask", len(held))
		}
	})
}

// TestTypedColumnThatDoesNotDecode: a stored value that is not its column's JSON fails the read
// that meets it, whole row or trace, with an error naming the column, instead of reading as
// absent.
func TestTypedColumnThatDoesNotDecode(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r, trace := seedRunRows(t, s, 1)
		for _, col := range []string{"after_keys", "claimed_by", "approval"} {
			err := s.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE tasks SET `+col+` = ? WHERE id = ?`, `{"not":`, trace[0].ID)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.TraceTasks(ctx, s.Reader(), r.ID); err == nil || !strings.Contains(err.Error(), col) {
				t.Errorf("a trace with a damaged %s: %v, want an error naming it", col, err)
			}
			if _, err := store.TaskByID(ctx, s.Reader(), trace[0].ID); err == nil || !strings.Contains(err.Error(), col) {
				t.Errorf("a row with a damaged %s: %v, want an error naming it", col, err)
			}
			if err := s.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE tasks SET `+col+` = NULL WHERE id = ?`, trace[0].ID)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		for _, col := range []string{"results", "attachments", "answer_calls", "usage", "route", "options", "addressed_member", "wait_spec", "resolved_by"} {
			err := s.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE tasks SET `+col+` = ? WHERE id = ?`, `"a string"`, trace[0].ID)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.TaskByID(ctx, s.Reader(), trace[0].ID); err == nil || !strings.Contains(err.Error(), col) {
				t.Errorf("a row with a %s of the wrong shape: %v, want an error naming it", col, err)
			}
			if _, err := store.TraceTasks(ctx, s.Reader(), r.ID); err != nil {
				t.Errorf("the trace reads %s, which is no trace column: %v", col, err)
			}
			if err := s.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE tasks SET `+col+` = NULL WHERE id = ?`, trace[0].ID)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestTurnTypedColumns: a turn's input attachments and tool names are stored as the JSON of
// their Go values and read back as the same values: a turn without attachments stores [], one
// without tool names NULL, one with an empty list [].
func TestTurnTypedColumns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := seedRun(t, s, 0)
		var turns []store.Turn
		err := s.Write(ctx, func(tx *store.Tx) error {
			u := &store.User{PublicID: store.NewPublicID(), Handle: "u" + r.PublicID[len(r.PublicID)-8:], DisplayName: "U"}
			if err := store.InsertUser(ctx, tx, u); err != nil {
				return err
			}
			a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: r.WorkspaceID, Handle: "bot", DisplayName: "Bot", StewardUserID: u.ID}
			if err := store.InsertAgent(ctx, tx, a); err != nil {
				return err
			}
			c := &store.Conversation{PublicID: store.NewPublicID(), WorkspaceID: r.WorkspaceID, AnsweringAgentID: a.ID, CreatedByKind: store.KindUser,
				CreatedByPublicID: u.PublicID, Status: "active"}
			if err := store.InsertConversation(ctx, tx, c); err != nil {
				return err
			}
			for i, tu := range []store.Turn{
				{InputAttachments: store.Attachments{{PublicID: "a", URI: "nexus://uploads/a", Filename: "f.txt", ContentType: "text/plain", ByteSize: 1, SHA256: "ab"}},
					ToolNames: store.Strings{"read"}},
				{InputAttachments: store.Attachments{}},
				{InputAttachments: store.Attachments{}, ToolNames: store.Strings{}},
			} {
				tu.PublicID, tu.ConversationID, tu.Position, tu.AuthorKind, tu.Model, tu.Status, tu.RunID =
					store.NewPublicID(), c.ID, int64(i+1), store.KindUser, "mock/scripted", "queued", r.ID
				if err := store.InsertTurn(ctx, tx, &tu); err != nil {
					return err
				}
				turns = append(turns, tu)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		stored := []struct{ attachments, toolNames string }{
			{`[{"public_id":"a","uri":"nexus://uploads/a","filename":"f.txt","content_type":"text/plain","byte_size":1,"sha256":"ab"}]`, `["read"]`},
			{`[]`, ""},
			{`[]`, `[]`},
		}
		for i, want := range turns {
			got, err := store.TurnByID(ctx, s.Reader(), want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.InputAttachments, want.InputAttachments) || !reflect.DeepEqual(got.ToolNames, want.ToolNames) {
				t.Errorf("turn %d read back %v %#v, want %v %#v", i, got.InputAttachments, got.ToolNames, want.InputAttachments, want.ToolNames)
			}
			var row struct {
				Attachments string  `db:"input_attachments"`
				ToolNames   *string `db:"tool_names"`
			}
			if err := s.Reader().Get(ctx, &row, `SELECT input_attachments, tool_names FROM turns WHERE id = ?`, want.ID); err != nil {
				t.Fatal(err)
			}
			if row.Attachments != stored[i].attachments || (row.ToolNames == nil) != (stored[i].toolNames == "") || (row.ToolNames != nil && *row.ToolNames != stored[i].toolNames) {
				t.Errorf("turn %d stored %s %v, want %s %q", i, row.Attachments, row.ToolNames, stored[i].attachments, stored[i].toolNames)
			}
		}
		// A stored list that does not decode fails the read instead of reading as no attachments.
		for i, col := range []string{"input_attachments", "tool_names"} {
			err := s.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE turns SET `+col+` = ? WHERE id = ?`, `{"not":`, turns[i].ID)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.TurnByID(ctx, s.Reader(), turns[i].ID); err == nil || !strings.Contains(err.Error(), col) {
				t.Errorf("a turn with a damaged %s: %v, want an error naming it", col, err)
			}
		}
	})
}
