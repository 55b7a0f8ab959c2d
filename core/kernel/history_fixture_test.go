package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// historyFixture writes conversations, turns, runs and tasks straight into a store, with public
// ids from a counter so that later rows sort after earlier ones, as UUIDv7 ids do.
type historyFixture struct {
	t     testing.TB
	s     *store.Store
	ctx   context.Context
	n     int
	ws    *store.Workspace
	user  *store.User
	agent *store.Agent
	// clock is the created_at of the next row, in Unix milliseconds.
	clock int64
}

// baseMillis is 2030-01-15T09:00:00.250Z.
const baseMillis = 1894698000250

func newHistoryFixture(t testing.TB, s *store.Store) *historyFixture {
	t.Helper()
	f := &historyFixture{t: t, s: s, ctx: context.Background(), clock: baseMillis}
	f.ws = &store.Workspace{PublicID: f.id(), Handle: "default", Name: "Default", CreatedAt: baseMillis}
	f.user = &store.User{PublicID: f.id(), Handle: "ana", DisplayName: "Ana", CreatedAt: baseMillis}
	f.write(func(tx *store.Tx) error {
		if err := store.InsertWorkspace(f.ctx, tx, f.ws); err != nil {
			return err
		}
		if err := store.InsertUser(f.ctx, tx, f.user); err != nil {
			return err
		}
		if err := store.InsertMembership(f.ctx, tx, f.ws.ID, f.user.ID, store.RoleOwner, baseMillis); err != nil {
			return err
		}
		f.agent = &store.Agent{PublicID: f.id(), WorkspaceID: f.ws.ID, Handle: "bot", DisplayName: "Bot", StewardUserID: f.user.ID, CreatedAt: baseMillis}
		return store.InsertAgent(f.ctx, tx, f.agent)
	})
	return f
}

func (f *historyFixture) id() string {
	f.n++
	return fmt.Sprintf("0190a5e2-0000-7000-8000-%012x", f.n)
}

func (f *historyFixture) write(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.s.Write(f.ctx, fn); err != nil {
		f.t.Fatal(err)
	}
}

// conversation adds an active conversation the agent answers; title "" means none.
func (f *historyFixture) conversation(title string) *store.Conversation {
	f.t.Helper()
	c := &store.Conversation{PublicID: f.id(), WorkspaceID: f.ws.ID, AnsweringAgentID: f.agent.ID, CreatedByKind: store.KindUser,
		CreatedByPublicID: f.user.PublicID, Status: "active", CreatedAt: f.clock, UpdatedAt: f.clock}
	if title != "" {
		c.Title = &title
	}
	f.write(func(tx *store.Tx) error { return store.InsertConversation(f.ctx, tx, c) })
	return c
}

// child adds a conversation opened by a spawn under parent.
func (f *historyFixture) child(parent *store.Conversation, title string) *store.Conversation {
	f.t.Helper()
	c := &store.Conversation{PublicID: f.id(), WorkspaceID: f.ws.ID, AnsweringAgentID: f.agent.ID, CreatedByKind: store.KindAgent,
		CreatedByPublicID: f.agent.PublicID, ParentConversationID: &parent.ID, Label: &title, Title: &title, Status: "active",
		CreatedAt: f.clock, UpdatedAt: f.clock}
	f.write(func(tx *store.Tx) error { return store.InsertConversation(f.ctx, tx, c) })
	return c
}

func (f *historyFixture) archive(c *store.Conversation) {
	f.t.Helper()
	at := f.clock
	f.write(func(tx *store.Tx) error { return store.SetConversation(f.ctx, tx, c.ID, "archived", at, &at) })
}

// turnSpec is a turn to add: its prompt, its answer ("" for none) and its status (default
// completed).
type turnSpec struct {
	prompt, answer, status, author string
}

// turn adds a turn and its run at the conversation's next position.
func (f *historyFixture) turn(c *store.Conversation, sp turnSpec) (*store.Turn, *store.Run) {
	f.t.Helper()
	var t *store.Turn
	var r *store.Run
	f.write(func(tx *store.Tx) error {
		var err error
		t, r, err = f.turnTx(tx, c, sp)
		return err
	})
	return t, r
}

func (f *historyFixture) turnTx(tx *store.Tx, c *store.Conversation, sp turnSpec) (*store.Turn, *store.Run, error) {
	status, runStatus := sp.status, "completed"
	switch status {
	case "":
		status = "completed"
	case "running":
		runStatus = "running"
	case "queued":
		runStatus = "pending"
	case "failed":
		runStatus = "needs_attention"
	case "canceled":
		runStatus = "canceled"
	}
	author := sp.author
	if author == "" {
		author = store.KindUser
	}
	now := f.clock
	f.clock += 1000
	r := &store.Run{PublicID: f.id(), WorkspaceID: f.ws.ID, ConversationID: &c.ID, CreatedByKind: store.KindUser,
		CreatedByPublicID: f.user.PublicID, AnsweringAgentPublicID: &f.agent.PublicID, Status: runStatus, ApprovalMode: "bypass",
		ApprovalRules: "[]", DeliverableTaskKey: "r1", Revision: 1, MainlineRoundCounter: 1, MemoryContext: "{}", CreatedAt: now, UpdatedAt: now}
	if err := store.InsertRun(f.ctx, tx, r); err != nil {
		return nil, nil, err
	}
	pos, err := store.NextTurnPosition(f.ctx, tx, c.ID)
	if err != nil {
		return nil, nil, err
	}
	t := &store.Turn{PublicID: f.id(), ConversationID: c.ID, Position: pos, AuthorKind: author, InputText: sp.prompt,
		InputAttachments: store.Attachments{}, Model: "mock/scripted", Status: status, RunID: r.ID, CreatedAt: now}
	if author != "kernel" {
		t.AuthorPublicID = &f.user.PublicID
	}
	if sp.answer != "" {
		k, a := "r1", sp.answer
		t.AnswerTaskKey, t.AnswerText = &k, &a
	}
	if err := store.InsertTurn(f.ctx, tx, t); err != nil {
		return nil, nil, err
	}
	return t, r, nil
}

// taskSpec is a task to add to a run.
type taskSpec struct {
	key, kind, status, visibility string
	toolName, title, output       string
	mainline                      bool
}

func (f *historyFixture) task(r *store.Run, sp taskSpec) {
	f.t.Helper()
	t := &store.Task{TaskTrace: store.TaskTrace{
		RunID: r.ID, Key: sp.key, Kind: sp.kind, Status: sp.status, Mainline: sp.mainline, Origin: "model",
		OnFailure: "absorb", Lifetime: "turn", Wake: "auto", Visibility: sp.visibility, LineageRoot: "r1",
		RoundNumber: 1, CreatedAt: f.clock,
	}}
	if sp.toolName != "" {
		t.ToolName = &sp.toolName
	}
	if sp.title != "" {
		t.Title = &sp.title
	}
	if sp.output != "" {
		t.Output = &sp.output
	}
	f.write(func(tx *store.Tx) error { return store.InsertTask(f.ctx, tx, t) })
}

// agentPrincipal is the run principal of the agent that answers the conversations.
func (f *historyFixture) agentPrincipal() runs.Member {
	return runs.Member{Kind: store.KindAgent, PublicID: f.agent.PublicID}
}

// call runs a history tool as the principal in the workspace, in a transaction as the
// scheduler does, and answers its result.
func (f *historyFixture) call(wire, input string, principal runs.Member) *runs.KernelResult {
	f.t.Helper()
	h := kernel.History{}
	canonical, run := kernel.CanonicalSessionRead, h.Read
	if wire == "session_search" {
		canonical, run = kernel.CanonicalSessionSearch, h.Search
	}
	var out *runs.KernelOutcome
	f.write(func(tx *store.Tx) error {
		var err error
		out, err = run(f.ctx, &runs.KernelCall{WorkspaceID: f.ws.ID, WorkspacePublicID: f.ws.PublicID, MemoryPrincipal: principal,
			TaskKey: "r1t0", ToolName: wire, Canonical: canonical, Input: json.RawMessage(input), Tx: tx})
		return err
	})
	if out == nil || out.Result == nil {
		f.t.Fatalf("%s %s: %+v", wire, input, out)
	}
	r := out.Result
	if !r.IsError && string(r.StructuredContent) != r.Content {
		f.t.Fatalf("%s %s: structured_content %s differs from content %s", wire, input, r.StructuredContent, r.Content)
	}
	return r
}

// read runs session_read as the agent and decodes its page.
func (f *historyFixture) read(input string) readPage {
	f.t.Helper()
	r := f.call("session_read", input, f.agentPrincipal())
	if r.IsError {
		f.t.Fatalf("session_read %s: %s", input, r.Content)
	}
	var p readPage
	if err := json.Unmarshal([]byte(r.Content), &p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// search runs session_search as the agent and decodes its page.
func (f *historyFixture) search(input string) searchPage {
	f.t.Helper()
	r := f.call("session_search", input, f.agentPrincipal())
	if r.IsError || r.Title != "searched history" {
		f.t.Fatalf("session_search %s: %+v", input, r)
	}
	var p searchPage
	if err := json.Unmarshal([]byte(r.Content), &p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

type readPage struct {
	Conversation struct {
		PublicID string  `json:"public_id"`
		Title    *string `json:"title"`
	} `json:"conversation"`
	Turns []struct {
		PublicID   string          `json:"public_id"`
		Position   int64           `json:"position"`
		InProgress bool            `json:"in_progress"`
		Truncated  bool            `json:"truncated"`
		Prompt     *string         `json:"prompt"`
		Steers     *string         `json:"steers"`
		Content    *string         `json:"content"`
		Execution  json.RawMessage `json:"execution"`
	} `json:"turns"`
	Pagination struct {
		BeforePosition *int64 `json:"before_position"`
		AfterPosition  *int64 `json:"after_position"`
		HasOlder       bool   `json:"has_older"`
		HasNewer       bool   `json:"has_newer"`
	} `json:"pagination"`
	Truncated bool `json:"truncated"`
}

func (p readPage) positions() []int64 {
	out := []int64{}
	for _, t := range p.Turns {
		out = append(out, t.Position)
	}
	return out
}

type searchHit struct {
	ConversationPublicID string  `json:"conversation_public_id"`
	Title                *string `json:"title"`
	TurnPublicID         *string `json:"turn_public_id"`
	VariantPublicID      *string `json:"variant_public_id"`
	Position             *int64  `json:"position"`
	Field                string  `json:"field"`
	Inherited            bool    `json:"inherited"`
	Excerpt              string  `json:"excerpt"`
	Truncated            bool    `json:"truncated"`
}

type searchPage struct {
	Matches    []searchHit `json:"matches"`
	Pagination struct {
		NextAfter *string `json:"next_after"`
	} `json:"pagination"`
}
