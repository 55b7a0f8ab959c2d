package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// The conversation tools (docs/agent-tools.md#delegation-and-conversations): spawn, send, status
// and cancel act on conversations from inside a conversation-hosted run. core/kernel checks their
// arguments and writes their receipts; this file resolves addressees and writes the rows, inside
// the kernel call's settling transaction (Conversing).
//
// Lock order (docs/development.md#how-the-kernel-runs-work). A kernel call runs under its own run's
// lock, and spawn, send and cancel then write into another conversation: a brand-new child
// conversation (which nobody else can hold yet), or an existing addressee whose conversation row,
// and for cancel whose runs, are locked after the caller's run. That inverts the documented order
// for those transitions; a PostgreSQL deadlock it causes is retried by Engine.write (SQLSTATE
// 40P01), so the inversion costs a retry, never a hang. The reply travelling back the other way
// never takes the caller's lock: the child's transaction records the sending run in its effects,
// and a follow-up transaction after the commit advances it (and the sweeper's poll settles any
// observer a crash left behind).
//
// Decisions of this version:
//   - Every spawn, and every send that owes a reply, places C-delegation-1, the one row that
//     carries the reply back (see DelegationRow); other designs place it for turn lifetime
//     only.
//   - Reply mail is posted as a kernel-authored turn under the parent conversation's answering
//     agent and its profile as they stand then (the machinery of branch results,
//     docs/agent-tools.md#delegation-and-conversations), not under a frozen copy of the
//     originating run's request surface.
//   - A steer whose reply ends before any seal carried it is queued as an ordinary turn of its
//     sender rather than lost.
//   - Write standing for an agent is its own conversation, one it answers, or one it created.
//   - No side conversations exist in this version, so side_conversation cannot occur, and no
//     door deletes a brief, so delegation_abandoned cannot occur.

// The conversation tools' refusal words (docs/agent-tools.md#delegation-and-conversations), each
// defined once.
const (
	WordNoConversation      = "no_conversation"
	WordUnknownConversation = "unknown_conversation"
	// WordSideConversation refuses a side conversation as an addressee or a spawner. No path creates a
	// side conversation in this version (docs/agent-tools.md#delegation-and-conversations), so the
	// refusal cannot occur yet; the word is kept so the vocabulary is complete when one does.
	WordSideConversation     = "side_conversation"
	WordParentWaiting        = "parent_waiting"
	WordAncestorConversation = "ancestor_conversation"
	WordNotAuthorized        = refusal.CodeNotAuthorized
	WordPrincipalUnknown     = "principal_unknown"
	WordAnswererNotEligible  = "answerer_not_eligible"
	WordAgentPrivate         = "agent_private"
	WordLabelTaken           = "label_taken"
	WordRunnerNotEligible    = refusal.CodeRunnerNotEligible
	WordModelNotAuthorized   = "model_not_authorized"
	WordScheduleOutOfRange   = "schedule_out_of_range"
)

// Roles of the rows a spawn or send places under its call
// (docs/development.md#how-the-kernel-runs-work).
const (
	RoleSpawn      = "spawn"
	RoleDelegation = "delegation"
)

// Request kinds and deliveries as conversation_requests stores them.
const (
	RequestSpawn = "spawn"
	RequestSend  = "send"

	DeliveryQueued    = "queued"
	DeliverySteering  = "steering"
	DeliveryScheduled = "scheduled"

	requestPending   = "pending"
	requestPosted    = "posted"
	requestWithdrawn = "withdrawn"
)

// Limits of the conversation tools.
const (
	// SpawnAwaitClock is a waited spawn's clock (docs/agent-tools.md#delegation-and-conversations):
	// spawn takes no timeout, and an hour is the wait tool's default, long enough for a typical first
	// reply.
	SpawnAwaitClock = time.Hour
	// MaxScheduleAhead bounds a scheduled send (docs/agent-tools.md#delegation-and-conversations): a
	// reminder further out than a month belongs in a calendar, not a conversation queue.
	MaxScheduleAhead = 30 * 24 * time.Hour
	// MaxHandlesListed bounds the agent handles a principal_unknown refusal lists: enough to
	// spot a typo, short enough for a tool result.
	MaxHandlesListed = 20
	// maxTreeDepth bounds the walk up a conversation tree: a guard against a corrupted cycle.
	maxTreeDepth = 1000
)

// Refused is a conversation tool's error result: its word and detail sentence.
type Refused struct {
	Word, Detail string
}

func refused(word, format string, args ...any) *Refused {
	return &Refused{Word: word, Detail: fmt.Sprintf(format, args...)}
}

// Conversing is the conversation tools' access to the engine inside a kernel call's settling
// transaction, under the calling run's lock. It is nil on a call without an engine behind it.
type Conversing struct {
	e   *Engine
	tx  *store.Tx
	fx  *effects
	run *store.Run
}

// Now is the engine's clock, which deliver_in is resolved against.
func (c *Conversing) Now() time.Time { return c.e.now() }

// Hosted reports whether the calling run belongs to a conversation
// (docs/agent-tools.md#delegation-and-conversations).
func (c *Conversing) Hosted() bool { return c.run.ConversationID != nil }

func (c *Conversing) senderConversation(ctx context.Context) (*store.Conversation, error) {
	if c.run.ConversationID == nil {
		return nil, errors.New("runs: a conversation tool ran on a standalone run")
	}
	return store.ConversationByID(ctx, c.tx, *c.run.ConversationID)
}

func (c *Conversing) senderAgent() string { return deref(c.run.AnsweringAgentPublicID) }

// Addressing is which tool resolves a to, and so which steps of
// docs/agent-tools.md#delegation-and-conversations apply.
type Addressing int

// The three addressing tools.
const (
	AddressStatus Addressing = iota
	AddressSend
	AddressCancel
)

// Resolve resolves a to (docs/agent-tools.md#delegation-and-conversations): a child label of the
// sender conversation (compared lowercased), else a conversation public id of the run's workspace;
// then, for send and cancel, the tree and standing checks in their documented order.
func (c *Conversing) Resolve(ctx context.Context, to string, mode Addressing) (*store.Conversation, *Refused, error) {
	s, err := c.senderConversation(ctx)
	if err != nil {
		return nil, nil, err
	}
	lower := strings.ToLower(strings.TrimSpace(to))
	target, err := store.ChildByLabel(ctx, c.tx, s.ID, lower)
	if errors.Is(err, store.ErrNotFound) {
		target = nil
		if store.IsPublicID(lower) {
			t, err := store.ConversationByPublicID(ctx, c.tx, lower)
			switch {
			case err == nil && t.WorkspaceID == c.run.WorkspaceID:
				target = t
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return nil, nil, err
			}
		}
	} else if err != nil {
		return nil, nil, err
	}
	if target == nil {
		return nil, refused(WordUnknownConversation, "no conversation %q that you can read.", to), nil
	}
	if mode == AddressStatus {
		return target, nil, nil
	}
	above, err := isAncestor(ctx, c.tx, s, target.ID)
	if err != nil {
		return nil, nil, err
	}
	if above && mode == AddressSend {
		waiting, err := store.ParentWaitingOn(ctx, c.tx, s.ID)
		if err != nil {
			return nil, nil, err
		}
		if waiting {
			return nil, refused(WordParentWaiting, "your parent is waiting for your reply; end your turn with the answer instead of sending."), nil
		}
	}
	if above {
		return nil, refused(WordAncestorConversation, "%s is above you in the conversation tree; finish your reply to answer it.", target.PublicID), nil
	}
	if !c.mayWrite(s, target) {
		return nil, refused(WordNotAuthorized, "you may read %s but not write in it.", target.PublicID), nil
	}
	return target, nil, nil
}

// mayWrite is an agent's write standing on a conversation: its own, one it answers, or one it
// created (a spawned child).
func (c *Conversing) mayWrite(s, target *store.Conversation) bool {
	agent := c.senderAgent()
	return target.ID == s.ID || target.AnsweringAgentPublicID == agent ||
		(target.CreatedByKind == store.KindAgent && target.CreatedByPublicID == agent)
}

// isAncestor reports whether id is above s in its conversation tree.
func isAncestor(ctx context.Context, q store.Querier, s *store.Conversation, id int64) (bool, error) {
	cur := s
	for i := 0; i < maxTreeDepth && cur.ParentConversationID != nil; i++ {
		if *cur.ParentConversationID == id {
			return true, nil
		}
		p, err := store.ConversationByID(ctx, q, *cur.ParentConversationID)
		if err != nil {
			return false, err
		}
		cur = p
	}
	return false, nil
}

// ConversationState is what status reports (docs/agent-tools.md#delegation-and-conversations).
type ConversationState struct {
	PublicID string
	// Running is true while a reply (a run) is live in the conversation.
	Running bool
	// Queued counts the conversation's queued, undelivered turns.
	Queued int
	// AnsweredBy is the answering agent's handle with its @.
	AnsweredBy string
	// WaitingForYou counts the turns from that conversation queued in the caller's own.
	WaitingForYou int
}

// State reads a resolved conversation's status.
func (c *Conversing) State(ctx context.Context, target *store.Conversation) (*ConversationState, error) {
	running, err := store.ConversationHasLiveRun(ctx, c.tx, target.ID)
	if err != nil {
		return nil, err
	}
	open, err := store.OpenTurns(ctx, c.tx, target.ID)
	if err != nil {
		return nil, err
	}
	st := &ConversationState{PublicID: target.PublicID, Running: running}
	for i := range open {
		if open[i].Status == TurnQueued {
			st.Queued++
		}
	}
	agent, err := store.AgentInWorkspace(ctx, c.tx, target.WorkspaceID, target.AnsweringAgentPublicID)
	if err != nil {
		return nil, err
	}
	st.AnsweredBy = "@" + agent.Handle
	if target.ID != *c.run.ConversationID {
		if st.WaitingForYou, err = store.QueuedTurnsFrom(ctx, c.tx, *c.run.ConversationID, target.PublicID); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// answerer resolves an agent argument (spawn.agent, send.agent): @handle or public id. where is
// "" for spawn and the addressee's public id for send, whose answerer_not_eligible sentence
// names it.
func (c *Conversing) answerer(ctx context.Context, ref, where string) (*store.AgentRow, *Refused, error) {
	var a *store.AgentRow
	var err error
	handle, id := "", ""
	if h, ok := strings.CutPrefix(ref, "@"); ok {
		handle = h
		a, err = store.AgentByHandle(ctx, c.tx, c.run.WorkspaceID, h)
	} else {
		id = strings.ToLower(ref)
		a, err = store.AgentInWorkspace(ctx, c.tx, c.run.WorkspaceID, id)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, nil, err
	}
	notEligible := func() *Refused {
		if where == "" {
			return refused(WordAnswererNotEligible, "agent %q cannot answer a conversation here: it is not an agent with write standing in this workspace.", ref)
		}
		return refused(WordAnswererNotEligible, "agent %q cannot answer in %s: it is not an agent with write standing there.", ref, where)
	}
	if a != nil {
		if a.RemovedAt.Valid {
			return nil, notEligible(), nil
		}
		return a, nil, nil
	}
	user, err := store.WorkspaceUserByRef(ctx, c.tx, c.run.WorkspaceID, handle, id)
	if err != nil {
		return nil, nil, err
	}
	if user {
		return nil, notEligible(), nil
	}
	agents, err := store.AgentsOfWorkspace(ctx, c.tx, c.run.WorkspaceID)
	if err != nil {
		return nil, nil, err
	}
	return nil, refused(WordPrincipalUnknown, "agent %q names no agent of this workspace. The agents are: %s.", ref, handleList(agents)), nil
}

// handleList is the workspace's agent handles, each with its @, in byte order, joined by ", ", at
// most MaxHandlesListed, then ", and <n> more" (docs/agent-tools.md#delegation-and-conversations).
func handleList(agents []store.AgentRow) string {
	hs := make([]string, len(agents))
	for i := range agents {
		hs[i] = "@" + agents[i].Handle
	}
	sort.Strings(hs)
	if len(hs) <= MaxHandlesListed {
		return strings.Join(hs, ", ")
	}
	return strings.Join(hs[:MaxHandlesListed], ", ") + fmt.Sprintf(", and %d more", len(hs)-MaxHandlesListed)
}

// modelRefused checks an explicit model for work whose declaration has tools or not.
func (c *Conversing) modelRefused(ref string, hasTools bool) (*Refused, error) {
	if _, err := c.e.models.Check(ref, hasTools); err != nil {
		rf, ok := refusal.As(err)
		if !ok {
			return nil, err
		}
		return refused(WordModelNotAuthorized, "model %q is not a model you may run here (%s).", ref, rf.Code), nil
	}
	return nil, nil
}

// profileRefused turns a profile acceptance refusal (a declaration word found while freezing
// the answerer's profile) into an error result with the door's word and sentence.
func profileRefused(err error) (*Refused, error) {
	if rf, ok := refusal.As(err); ok {
		return &Refused{Word: rf.Code, Detail: rf.Message}, nil
	}
	return nil, err
}

// replyModel is the model a brief or send's turn runs on
// (docs/agent-tools.md#delegation-and-conversations): the answerer's default model; else, when it
// has replied there before, the model it used; else the explicit selection, else the calling
// round's model, else the deployment default.
func (c *Conversing) replyModel(ctx context.Context, conv *store.Conversation, agentPublicID string, prof *AcceptedProfile, explicit, round string) (string, error) {
	if prof.DefaultModel != "" {
		return prof.DefaultModel, nil
	}
	if conv.ID != 0 {
		prev, err := store.PreviousTurnModel(ctx, c.tx, conv.ID, agentPublicID)
		if err != nil {
			return "", err
		}
		if prev != "" {
			return prev, nil
		}
	}
	for _, ref := range []string{explicit, round} {
		if ref != "" {
			return ref, nil
		}
	}
	return c.e.models.Default().Ref, nil
}

// SpawnSpec is a checked spawn call (docs/agent-tools.md#delegation-and-conversations).
type SpawnSpec struct {
	Prompt string
	// Agent is the agent argument as given ("" for a fresh copy of the caller's own agent).
	Agent string
	// Label is lowercased already; "" for none.
	Label string
	// Lifetime and Wake are resolved (the arguments, else the calling round's).
	Lifetime, Wake string
	Wait           bool
	// Runner is the explicit default_runner_executor_public_id; RunnerSet tells an explicit
	// value (Runner, or RunnerNull for null) from an absent one (inherit).
	Runner                string
	RunnerSet, RunnerNull bool
	// Model is the explicit model ("" for none); RoundModel the calling round's.
	Model, RoundModel string
}

// Spawned is a spawn's effect, for its receipt.
type Spawned struct {
	ConversationPublicID string
	Label                string
	AnsweredBy           string
	// Rows are the rows to place under the call: C-delegation-1, and C-spawn-1 when waited.
	Rows []*store.Task
}

// Spawn opens a child conversation of the caller's and posts the brief as its first input
// (docs/agent-tools.md#delegation-and-conversations), in the check order of
// docs/agent-tools.md#delegation-and-conversations. Everything is keyed by the call: a second
// evaluation of the same row finds its request and creates nothing twice.
func (c *Conversing) Spawn(ctx context.Context, callKey string, sp *SpawnSpec) (*Spawned, *Refused, error) {
	if prior, err := store.RequestByCall(ctx, c.tx, c.run.ID, callKey); err == nil {
		out, err := c.spawnedOf(ctx, prior)
		return out, nil, err
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, nil, err
	}
	s, err := c.senderConversation(ctx)
	if err != nil {
		return nil, nil, err
	}
	var agent *store.AgentRow
	if sp.Agent == "" {
		if agent, err = store.AgentInWorkspace(ctx, c.tx, c.run.WorkspaceID, c.senderAgent()); err != nil {
			return nil, nil, err
		}
	} else {
		var rf *Refused
		if agent, rf, err = c.answerer(ctx, sp.Agent, ""); rf != nil || err != nil {
			return nil, rf, err
		}
	}
	if rf, err := c.privateRefusal(ctx, agent); rf != nil || err != nil {
		return nil, rf, err
	}
	var label *string
	if sp.Label != "" {
		taken, err := store.ChildByLabel(ctx, c.tx, s.ID, sp.Label)
		switch {
		case err == nil:
			return nil, refused(WordLabelTaken, "label %q is already used by conversation %s.", sp.Label, taken.PublicID), nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, nil, err
		}
		label = &sp.Label
	}
	var runner *string
	switch {
	case sp.RunnerSet && !sp.RunnerNull:
		id := strings.ToLower(sp.Runner)
		if !c.e.eligibleRunner(ctx, c.tx, c.run.WorkspaceID, id) {
			return nil, refused(WordRunnerNotEligible, "Runner %s is not available to the answering agent.", sp.Runner), nil
		}
		runner = &id
	case !sp.RunnerSet && c.run.DefaultRunnerExecutorPublicID != nil:
		// An inherited Runner the answerer may not use is not refused: the child has none.
		if c.e.eligibleRunner(ctx, c.tx, c.run.WorkspaceID, *c.run.DefaultRunnerExecutorPublicID) {
			runner = c.run.DefaultRunnerExecutorPublicID
		}
	}
	now := c.e.nowMS()
	child := &store.Conversation{PublicID: store.NewPublicID(), WorkspaceID: c.run.WorkspaceID, WorkspacePublicID: c.run.WorkspacePublicID,
		AnsweringAgentID: agent.ID, AnsweringAgentPublicID: agent.PublicID, CreatedByKind: store.KindAgent, CreatedByPublicID: c.senderAgent(),
		DefaultRunnerExecutorPublicID: runner, ParentConversationID: &s.ID, Label: label, Status: ConversationActive,
		CreatedAt: now, UpdatedAt: now}
	prof, err := c.e.acceptProfile(ctx, c.tx, child, nil)
	if err != nil {
		rf, err := profileRefused(err)
		return nil, rf, err
	}
	if sp.Model != "" {
		if rf, err := c.modelRefused(sp.Model, prof.Frozen.HasTools); rf != nil || err != nil {
			return nil, rf, err
		}
	}
	ref, err := c.replyModel(ctx, child, agent.PublicID, prof, sp.Model, sp.RoundModel)
	if err != nil {
		return nil, nil, err
	}
	if err := store.InsertConversation(ctx, c.tx, child); err != nil {
		return nil, nil, err
	}
	if child, err = store.LockConversation(ctx, c.tx, child.ID); err != nil {
		return nil, nil, err
	}
	sender := s.PublicID
	post := &turnPost{PublicID: store.NewPublicID(), AuthorKind: store.KindAgent, AuthorPublicID: c.senderAgent(), SenderConversation: &sender,
		Text: sp.Prompt, Model: ref, AgentID: agent.ID, AgentPublicID: agent.PublicID, Profile: prof}
	turn, err := c.e.postTurn(ctx, c.tx, c.fx, child, post, now)
	if err != nil {
		return nil, nil, err
	}
	req := &store.ConversationRequest{PublicID: turn.PublicID, ReceiptKey: RequestSpawn + ":" + c.run.PublicID + ":" + callKey,
		RunID: c.run.ID, CallKey: callKey, Kind: RequestSpawn, Delivery: DeliveryQueued, ConversationID: child.ID,
		SenderConversationID: s.ID, AuthorPublicID: c.senderAgent(), AnsweringAgentID: agent.ID, InputText: sp.Prompt, Model: ref,
		TurnID: &turn.ID, ReplyOwed: true, Status: requestPosted, Receipt: "{}", CreatedAt: now, ReleasedAt: &now}
	if err := store.InsertConversationRequest(ctx, c.tx, req); err != nil {
		return nil, nil, err
	}
	out := &Spawned{ConversationPublicID: child.PublicID, Label: sp.Label, AnsweredBy: "@" + agent.Handle}
	out.Rows = append(out.Rows, DelegationRow(callKey, sp.Lifetime, sp.Wake, now))
	if sp.Wait {
		out.Rows = append(out.Rows, SpawnAwait(callKey))
	}
	return out, nil, nil
}

// spawnedOf describes a spawn already made, for a second evaluation of its call.
func (c *Conversing) spawnedOf(ctx context.Context, r *store.ConversationRequest) (*Spawned, error) {
	child, err := store.ConversationByID(ctx, c.tx, r.ConversationID)
	if err != nil {
		return nil, err
	}
	agent, err := store.AgentInWorkspace(ctx, c.tx, child.WorkspaceID, child.AnsweringAgentPublicID)
	if err != nil {
		return nil, err
	}
	return &Spawned{ConversationPublicID: child.PublicID, Label: deref(child.Label), AnsweredBy: "@" + agent.Handle}, nil
}

// DelegationRow is the kernel row C-delegation-1 that carries a request's reply back to the sending
// run (docs/agent-tools.md#delegation-and-conversations): dispatched from birth, detached, hidden,
// absorbing, without a clock of its own. It settles with the reply's <task_result> envelope when
// the addressee's turn ends, and is then delivered like a detached branch's result
// (docs/agent-tools.md#delegation-and-conversations): with turn lifetime it holds the run's final
// delivery; with conversation lifetime it comes back as kernel mail. The row is needed only
// for turn lifetime; a conversation-lifetime spawn, and a send that owes a reply, place it too, as
// the one carrier of the reply, so that a reply is delivered by the same machinery whatever the
// lifetime.
func DelegationRow(callKey, lifetime, wake string, now int64) *store.Task {
	key := ChildKey(callKey, RoleDelegation, 1)
	return &store.Task{Key: key, Kind: KindDelegation, Status: StatusDispatched, Origin: OriginKernel, OnFailure: OnFailureAbsorb,
		Lifetime: lifetime, Wake: wake, Detached: true, Visibility: VisibilityHidden, LineageRoot: key, ReadyAt: &now, DispatchedAt: &now}
}

// SpawnAwait is the kernel-held await C-spawn-1 a waited spawn places
// (docs/agent-tools.md#delegation-and-conversations): no token, dispatched, off every inbox, a
// fixed one-hour clock, absorbing.
func SpawnAwait(callKey string) *store.Task {
	key := ChildKey(callKey, RoleSpawn, 1)
	clock := SpawnAwaitClock.Milliseconds()
	return &store.Task{Key: key, Kind: KindAwait, Status: StatusDispatched, Origin: OriginKernel, OnFailure: OnFailureAbsorb,
		Lifetime: LifetimeTurn, Wake: WakeAuto, Visibility: VisibilityHidden, LineageRoot: key, AwaitKind: ptr(AwaitSpawn),
		TimeoutMS: &clock}
}

// SendSpec is a checked send call (docs/agent-tools.md#delegation-and-conversations).
type SendSpec struct {
	To, Agent, Message string
	Steer              bool
	// DeliverAt is the resolved delivery time in Unix milliseconds, 0 when not scheduled.
	DeliverAt int64
	// Wake is resolved (the argument, else the calling round's).
	Wake string
	// Model is the explicit model ("" for none); RoundModel the calling round's.
	Model, RoundModel string
}

// Sent is a send's receipt facts, stored with its request so that a replay answers the first.
type Sent struct {
	ConversationPublicID string `json:"conversation_public_id"`
	InputPublicID        string `json:"input_public_id"`
	Delivery             string `json:"delivery"`
	DeliverAt            *int64 `json:"deliver_at"`
	// For is the selected answerer's handle with its @ when the call named an agent.
	For string `json:"for,omitempty"`
	// Rows are the rows to place under the call (C-delegation-1 when a reply is owed).
	Rows []*store.Task `json:"-"`
}

// Send addresses an input to a conversation (docs/agent-tools.md#delegation-and-conversations) in
// the check order of docs/agent-tools.md#delegation-and-conversations after the argument shapes:
// to, agent, the messaging policy, model, then the input door.
func (c *Conversing) Send(ctx context.Context, callKey string, sp *SendSpec) (*Sent, *Refused, error) {
	if prior, err := store.RequestByCall(ctx, c.tx, c.run.ID, callKey); err == nil {
		var out Sent
		if err := json.Unmarshal([]byte(prior.Receipt), &out); err != nil {
			return nil, nil, fmt.Errorf("runs: the receipt of %s: %w", prior.ReceiptKey, err)
		}
		return &out, nil, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, nil, err
	}
	target, rf, err := c.Resolve(ctx, sp.To, AddressSend)
	if rf != nil || err != nil {
		return nil, rf, err
	}
	s, err := c.senderConversation(ctx)
	if err != nil {
		return nil, nil, err
	}
	var agent *store.AgentRow
	if sp.Agent != "" {
		if agent, rf, err = c.answerer(ctx, sp.Agent, target.PublicID); rf != nil || err != nil {
			return nil, rf, err
		}
	} else if agent, err = store.AgentInWorkspace(ctx, c.tx, target.WorkspaceID, target.AnsweringAgentPublicID); err != nil {
		return nil, nil, err
	}
	if rf, err := c.privateRefusal(ctx, agent); rf != nil || err != nil {
		return nil, rf, err
	}
	prof, err := c.e.acceptProfileFor(ctx, c.tx, target, agent.ID, agent.PublicID, nil)
	if err != nil {
		rf, err := profileRefused(err)
		return nil, rf, err
	}
	if sp.Model != "" {
		if rf, err := c.modelRefused(sp.Model, prof.Frozen.HasTools); rf != nil || err != nil {
			return nil, rf, err
		}
	}
	if target, err = store.LockConversation(ctx, c.tx, target.ID); err != nil {
		return nil, nil, err
	}
	now := c.e.nowMS()
	if sp.DeliverAt != 0 && (sp.DeliverAt <= now || sp.DeliverAt > now+MaxScheduleAhead.Milliseconds()) {
		return nil, refused(WordScheduleOutOfRange, "the delivery time must be in the future and at most %d days ahead.",
			int(MaxScheduleAhead/(24*time.Hour))), nil
	}
	if target.Status == ConversationArchived {
		return nil, &Refused{Word: CodeConversationArchived, Detail: "The conversation is archived."}, nil
	}
	ref, err := c.replyModel(ctx, target, agent.PublicID, prof, sp.Model, sp.RoundModel)
	if err != nil {
		return nil, nil, err
	}
	open, err := store.OpenTurns(ctx, c.tx, target.ID)
	if err != nil {
		return nil, nil, err
	}
	req := &store.ConversationRequest{PublicID: store.NewPublicID(), ReceiptKey: RequestSend + ":" + c.run.PublicID + ":" + callKey,
		RunID: c.run.ID, CallKey: callKey, Kind: RequestSend, Delivery: DeliveryQueued, ConversationID: target.ID,
		SenderConversationID: s.ID, AuthorPublicID: c.senderAgent(), AnsweringAgentID: agent.ID, InputText: sp.Message, Model: ref,
		Status: requestPosted, CreatedAt: now}
	var running *store.Turn
	for i := range open {
		if open[i].Status == TurnRunning {
			running = &open[i]
		}
	}
	switch {
	case sp.Steer && running != nil:
		req.Delivery, req.Status, req.SteerRunID = DeliverySteering, requestPending, &running.RunID
	case sp.DeliverAt != 0:
		req.Delivery, req.Status, req.DeliverAt = DeliveryScheduled, requestPending, &sp.DeliverAt
	default:
		queued := 0
		for i := range open {
			if open[i].Status == TurnQueued {
				queued++
			}
		}
		if queued >= MaxQueuedTurns {
			return nil, &Refused{Word: CodeInputQueueFull, Detail: fmt.Sprintf("The conversation already has %d queued turns.", MaxQueuedTurns)}, nil
		}
		sender := s.PublicID
		turn, err := c.e.postTurn(ctx, c.tx, c.fx, target, &turnPost{PublicID: req.PublicID, AuthorKind: store.KindAgent,
			AuthorPublicID: c.senderAgent(), SenderConversation: &sender, Text: sp.Message, Model: ref, AgentID: agent.ID,
			AgentPublicID: agent.PublicID, Profile: prof}, now)
		if err != nil {
			return nil, nil, err
		}
		req.TurnID, req.ReleasedAt = &turn.ID, &now
	}
	// A queued or scheduled send to one of the sender's own children owes a reply; a steer shares the
	// reply it joins, and a send anywhere else owes none
	// (docs/agent-tools.md#delegation-and-conversations).
	req.ReplyOwed = req.Delivery != DeliverySteering && target.ParentConversationID != nil && *target.ParentConversationID == s.ID
	out := &Sent{ConversationPublicID: target.PublicID, InputPublicID: req.PublicID, Delivery: req.Delivery, DeliverAt: req.DeliverAt}
	if sp.Agent != "" {
		out.For = "@" + agent.Handle
	}
	receipt, err := json.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	req.Receipt = string(receipt)
	if err := store.InsertConversationRequest(ctx, c.tx, req); err != nil {
		return nil, nil, err
	}
	if req.ReplyOwed {
		out.Rows = append(out.Rows, DelegationRow(callKey, LifetimeConversation, sp.Wake, now))
	}
	return out, nil, nil
}

// privateRefusal applies the workspace's agent messaging policy to a new request
// (docs/agent-tools.md#delegation-and-conversations): a private agent accepts new requests only
// from itself (its own spawned copies included); the sender is the calling run's answering agent.
// An agent absent from the policy is public.
func (c *Conversing) privateRefusal(ctx context.Context, recipient *store.AgentRow) (*Refused, error) {
	if recipient.PublicID == c.senderAgent() {
		return nil, nil
	}
	private, err := store.AgentMessagingPrivate(ctx, c.tx, c.run.WorkspaceID, recipient.PublicID)
	if err != nil || !private {
		return nil, err
	}
	return refused(WordAgentPrivate, "@%s accepts new requests only from the agents the workspace's messaging policy allows.", recipient.Handle), nil
}

// Cancel calls off the work this run started in a conversation
// (docs/agent-tools.md#delegation-and-conversations): its requests there that have not started are
// withdrawn (a queued turn is canceled with its run, a scheduled or unlanded steer is withdrawn),
// and the runs answering those that started are stopped with force, which cancels their detached
// work and undelivered results; the requests those runs sent on are canceled the same way,
// recursively. Work this run did not start is untouched. It reports whether anything was left to
// cancel.
func (c *Conversing) Cancel(ctx context.Context, target *store.Conversation) (bool, error) {
	reqs, err := store.RequestsOfRunIn(ctx, c.tx, c.run.ID, target.ID)
	if err != nil {
		return false, err
	}
	by := Member{Kind: store.KindAgent, PublicID: c.senderAgent()}
	seen := map[int64]bool{c.run.ID: true}
	any := false
	for i := range reqs {
		did, err := c.e.cancelRequest(ctx, c.tx, c.fx, &reqs[i], by, seen)
		if err != nil {
			return false, err
		}
		any = any || did
	}
	return any, nil
}

// cancelRequestsOf cancels every unfinished request a stopped run made, recursively.
func (e *Engine) cancelRequestsOf(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, by Member) error {
	reqs, err := store.RequestsOfRun(ctx, tx, run.ID)
	if err != nil {
		return err
	}
	seen := map[int64]bool{run.ID: true}
	for i := range reqs {
		if _, err := e.cancelRequest(ctx, tx, fx, &reqs[i], by, seen); err != nil {
			return err
		}
	}
	return nil
}

// cancelRequest withdraws one request or stops the run answering it, and recursively what that
// run sent on. seen guards against visiting a run twice.
func (e *Engine) cancelRequest(ctx context.Context, tx *store.Tx, fx *effects, r *store.ConversationRequest, by Member, seen map[int64]bool) (bool, error) {
	now := e.nowMS()
	if r.Status == requestWithdrawn {
		return false, nil
	}
	if r.TurnID == nil {
		if r.Status != requestPending {
			return false, nil
		}
		r.Status = requestWithdrawn
		return true, store.SetRequest(ctx, tx, r)
	}
	turn, err := store.TurnByID(ctx, tx, *r.TurnID)
	if err != nil {
		return false, err
	}
	run, err := store.LockRun(ctx, tx, turn.RunID)
	if err != nil {
		return false, err
	}
	if seen[run.ID] {
		return false, nil
	}
	seen[run.ID] = true
	did := false
	if run.Status != RunCompleted && run.Status != RunCanceled && run.Status != RunCanceling {
		if turn.Status == TurnQueued {
			r.Status = requestWithdrawn
			if err := store.SetRequest(ctx, tx, r); err != nil {
				return false, err
			}
		}
		if err := e.stopRunTx(ctx, tx, fx, run, by, true, now); err != nil {
			return false, err
		}
		did = true
	}
	// The requests the answering run sent on to its own children are canceled by source.
	onward, err := store.RequestsOfRun(ctx, tx, run.ID)
	if err != nil {
		return false, err
	}
	for i := range onward {
		d, err := e.cancelRequest(ctx, tx, fx, &onward[i], by, seen)
		if err != nil {
			return false, err
		}
		did = did || d
	}
	return did, nil
}

// replyOf reads the reply a request's addressee gave
// (docs/agent-tools.md#delegation-and-conversations): settled once its turn ended (completed,
// failed or canceled) or the request was withdrawn before it started; the envelope is keyed by the
// call and names the child conversation.
func replyOf(ctx context.Context, q store.Querier, runID int64, callKey string) (*TaskResult, bool, error) {
	r, err := store.RequestByCall(ctx, q, runID, callKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	conv, err := store.ConversationByID(ctx, q, r.ConversationID)
	if err != nil {
		return nil, false, err
	}
	tr := &TaskResult{Key: callKey, Conversation: conv.PublicID, ModelSource: true, ModelPrompt: r.InputText}
	if r.Status == requestWithdrawn && r.TurnID == nil {
		tr.Status, tr.Error = StatusCanceled, &TaskError{Key: KeyTaskCanceled}
		return tr, true, nil
	}
	if r.TurnID == nil {
		return nil, false, nil
	}
	turn, err := store.TurnByID(ctx, q, *r.TurnID)
	if err != nil {
		return nil, false, err
	}
	switch turn.Status {
	case TurnCompleted:
		tr.Status, tr.Output = StatusCompleted, deref(turn.AnswerText)
	case TurnFailed:
		tr.Status = StatusFailed
		tr.Error = &TaskError{Key: deref(turn.FailureKey), Detail: deref(turn.FailureDetail)}
	case TurnCanceled:
		tr.Status, tr.Error = StatusCanceled, &TaskError{Key: KeyTaskCanceled}
	default:
		return nil, false, nil
	}
	return tr, true, nil
}

// observeRequests settles the delegation rows of a run whose reply has arrived, in the caller's
// transaction under the run's lock: the row completes with the reply's envelope and is then
// delivered as a detached result (docs/agent-tools.md#delegation-and-conversations), unless the
// call's waited await took the reply first, in which case it is recorded as delivered with the
// await and never mailed (the reply comes back once). It reports whether it settled any.
func (e *Engine) observeRequests(ctx context.Context, tx *store.Tx, run *store.Run, tasks []store.Task, byKey map[string]*store.Task, now int64) (bool, error) {
	settled := false
	for i := range tasks {
		t := &tasks[i]
		if t.Kind != KindDelegation || t.Status != StatusDispatched || t.ParentKey == nil {
			continue
		}
		tr, done, err := replyOf(ctx, tx, run.ID, *t.ParentKey)
		if err != nil {
			return false, err
		}
		if !done {
			continue
		}
		out := tr.Render()
		isErr := tr.Status != StatusCompleted
		seq, err := store.NextSettleSeq(ctx, tx, run.ID)
		if err != nil {
			return false, err
		}
		set := []store.Assign{{Col: "status", Val: StatusCompleted}, {Col: "is_error", Val: isErr}, {Col: "output", Val: out},
			{Col: "content", Val: textContent(out)}, {Col: "resolved_by", Val: *jsonText(Member{Kind: OriginKernel})},
			{Col: "completed_at", Val: now}, {Col: "settle_seq", Val: seq}}
		if a := byKey[ChildKey(*t.ParentKey, RoleSpawn, 1)]; a != nil && a.Status == StatusCompleted {
			set = append(set, store.Assign{Col: "delivered_with", Val: a.Key}, store.Assign{Col: "result_delivered_at", Val: now})
			t.DeliveredWith, t.ResultDeliveredAt = &a.Key, &now
		}
		if _, err := store.SetTask(ctx, tx, t.ID, &store.TaskGuard{Statuses: []string{StatusDispatched}}, set...); err != nil {
			return false, err
		}
		t.Status, t.IsError, t.CompletedAt, t.SettleSeq = StatusCompleted, &isErr, &now, &seq
		settled = true
	}
	return settled, nil
}

// SpawnStillWorkingText is a waited spawn's result when its await expired or was canceled
// before the reply (docs/agent-tools.md#delegation-and-conversations): only the waiting ended.
func SpawnStillWorkingText(conversationPublicID, label, answeredBy string) string {
	return SpawnedLine(conversationPublicID, label, answeredBy) + ".\n" +
		"(the conversation is still working; its reply will reach you later in a message that is not from the person)"
}

// SpawnedLine is the opening of a spawn's texts, without its ending:
// `Spawned conversation <id> (label "<label>"), answered by @<handle>`.
func SpawnedLine(conversationPublicID, label, answeredBy string) string {
	s := "Spawned conversation " + conversationPublicID
	if label != "" {
		s += fmt.Sprintf(" (label %q)", label)
	}
	return s + ", answered by " + answeredBy
}

// SpawnTitle is a spawn call's title: `spawned <label>`, or `spawned <conversation id>`.
func SpawnTitle(conversationPublicID, label string) string {
	if label != "" {
		return "spawned " + label
	}
	return "spawned " + conversationPublicID
}

// SpawnStructured is a spawn's structured_content
// (docs/agent-tools.md#delegation-and-conversations).
type SpawnStructured struct {
	ConversationPublicID string  `json:"conversation_public_id"`
	Label                *string `json:"label"`
	AnsweredBy           string  `json:"answered_by"`
	RunPublicID          string  `json:"run_public_id"`
	Task                 string  `json:"task"`
	Wait                 bool    `json:"wait"`
}

// observeSpawn reads a waited spawn's await: the child's reply settles it (resolved by the
// kernel) and the call completes with the reply's envelope, an error flag when the reply did not
// complete; an await that expired or was canceled first ends only the waiting, and the call
// completes with the two-line text and the receipt's structured_content.
func (e *Engine) observeSpawn(ctx context.Context, q store.Querier, call, child *store.Task) (*settlement, error) {
	full, err := store.TaskByID(ctx, q, child.ID)
	if err != nil {
		return nil, err
	}
	if Terminal(full.Status) {
		if full.Status == StatusCompleted {
			return &settlement{status: StatusCompleted, isError: full.IsError, output: deref(full.Output), content: full.Content}, nil
		}
		return e.spawnStillWorking(ctx, q, call)
	}
	tr, done, err := replyOf(ctx, q, call.RunID, call.Key)
	if err != nil || !done {
		return nil, err
	}
	out := tr.Render()
	isErr := tr.Status != StatusCompleted
	if err := e.resolveWait(ctx, q, full, out, isErr); err != nil {
		return nil, err
	}
	child.Status = StatusCompleted
	return &settlement{status: StatusCompleted, isError: &isErr, output: out, content: textContent(out)}, nil
}

func (e *Engine) spawnStillWorking(ctx context.Context, q store.Querier, call *store.Task) (*settlement, error) {
	r, err := store.RequestByCall(ctx, q, call.RunID, call.Key)
	if err != nil {
		return nil, err
	}
	conv, err := store.ConversationByID(ctx, q, r.ConversationID)
	if err != nil {
		return nil, err
	}
	agent, err := store.AgentInWorkspace(ctx, q, conv.WorkspaceID, conv.AnsweringAgentPublicID)
	if err != nil {
		return nil, err
	}
	run, err := store.RunByID(ctx, q, call.RunID)
	if err != nil {
		return nil, err
	}
	label := deref(conv.Label)
	out := SpawnStillWorkingText(conv.PublicID, label, "@"+agent.Handle)
	sc := jsonText(SpawnStructured{ConversationPublicID: conv.PublicID, Label: conv.Label, AnsweredBy: "@" + agent.Handle,
		RunPublicID: run.PublicID, Task: call.Key, Wait: true})
	return &settlement{status: StatusCompleted, isError: ptr(false), output: out, content: textContent(out), structuredContent: sc}, nil
}

// noteReply records, when a turn ends, the sending run whose reply row observes it: the
// follow-up after the commit advances that run without this transaction taking its lock
// (docs/development.md#how-the-kernel-runs-work).
func (e *Engine) noteReply(ctx context.Context, q store.Querier, fx *effects, turn *store.Turn) error {
	r, err := store.RequestOfTurn(ctx, q, turn.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.ReplyOwed || r.Kind == RequestSpawn {
		fx.observe = append(fx.observe, r.RunID)
	}
	return nil
}

// replySender is the child conversation a delivered reply came from, "" for a branch result.
func replySender(ctx context.Context, q store.Querier, b pendingBranch) string {
	if b.root.Kind != KindDelegation || b.root.ParentKey == nil {
		return ""
	}
	r, err := store.RequestByCall(ctx, q, b.root.RunID, *b.root.ParentKey)
	if err != nil {
		return ""
	}
	c, err := store.ConversationByID(ctx, q, r.ConversationID)
	if err != nil {
		return ""
	}
	return c.PublicID
}

// advanceObservers advances, each in its own transaction, the runs whose reply rows may have
// settled in the transaction that just committed.
func (e *Engine) advanceObservers(ctx context.Context, runIDs []int64) {
	done := map[int64]bool{}
	for _, id := range runIDs {
		if done[id] {
			continue
		}
		done[id] = true
		err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
			run, err := store.LockRun(ctx, tx, id)
			if err != nil {
				return err
			}
			return e.advance(ctx, tx, fx, run)
		})
		if err != nil && ctx.Err() == nil {
			// The sweeper's poll settles the observer later (docs/development.md#how-the-kernel-runs-work).
			e.log.Error("advance reply observer", "run_id", id, "error", err)
		}
	}
}

// observeReplies is the poll behind advanceObservers: it settles the spawn awaits and delegation
// rows whose reply has arrived meanwhile, taking a run's lock only for one whose reply is final.
// It reports how many runs it advanced.
func (e *Engine) observeReplies(ctx context.Context) (int, error) {
	q := e.store.Reader()
	n := 0
	var after int64
	for {
		ts, err := store.OpenRequestObservers(ctx, q, after, SweepBatch)
		if err != nil {
			return n, err
		}
		for i := range ts {
			t := &ts[i]
			after = t.ID
			if t.ParentKey == nil {
				continue
			}
			if _, done, err := replyOf(ctx, q, t.RunID, *t.ParentKey); err != nil || !done {
				if err != nil {
					return n, err
				}
				continue
			}
			e.advanceObservers(ctx, []int64{t.RunID})
			n++
		}
		if len(ts) < SweepBatch {
			return n, nil
		}
	}
}

// releaseScheduled queues the scheduled inputs whose time has come
// (docs/development.md#how-the-kernel-runs-work, docs/agent-tools.md#delegation-and-conversations
// docs/agent-tools.md#the-approval-gate): each takes its queue position now, as a turn authored by
// its sender, in its own transaction under the addressee's lock. An addressee archived meanwhile
// withdraws the input, and its owed reply reads canceled. It reports how many it released.
func (e *Engine) releaseScheduled(ctx context.Context) (int, error) {
	due, err := store.DueRequests(ctx, e.store.Reader(), e.nowMS(), SweepBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range due {
		id := due[i].ID
		var observer int64
		err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
			observer = 0
			c, err := store.LockConversation(ctx, tx, due[i].ConversationID)
			if err != nil {
				return err
			}
			r, err := store.RequestByCall(ctx, tx, due[i].RunID, due[i].CallKey)
			if err != nil || r.ID != id || r.Status != requestPending {
				return err
			}
			now := e.nowMS()
			if r.ReplyOwed {
				observer = r.RunID
			}
			if c.Status != ConversationActive {
				r.Status = requestWithdrawn
				return store.SetRequest(ctx, tx, r)
			}
			if err := e.postRequest(ctx, tx, fx, c, r, now); err != nil {
				return err
			}
			n++
			return store.SetRequest(ctx, tx, r)
		})
		if err != nil {
			return n, err
		}
		if observer != 0 {
			e.advanceObservers(ctx, []int64{observer})
		}
	}
	return n, nil
}

// postRequest posts a held request (a scheduled input whose time came, or a steer whose reply
// ended before any seal carried it) as a turn of its sender into a conversation the caller has
// locked, taking its queue position now; the queue bound does not apply to an input already
// accepted.
func (e *Engine) postRequest(ctx context.Context, tx *store.Tx, fx *effects, c *store.Conversation, r *store.ConversationRequest, now int64) error {
	agent, err := store.AgentByID(ctx, tx, r.AnsweringAgentID)
	if err != nil {
		return err
	}
	prof, err := e.acceptProfileFor(ctx, tx, c, agent.ID, agent.PublicID, nil)
	if err != nil {
		return err
	}
	sender, err := store.ConversationByID(ctx, tx, r.SenderConversationID)
	if err != nil {
		return err
	}
	turn, err := e.postTurn(ctx, tx, fx, c, &turnPost{PublicID: r.PublicID, AuthorKind: store.KindAgent, AuthorPublicID: r.AuthorPublicID,
		SenderConversation: &sender.PublicID, Text: r.InputText, Model: r.Model, AgentID: agent.ID, AgentPublicID: agent.PublicID,
		Profile: prof}, now)
	if err != nil {
		return err
	}
	r.Status, r.TurnID, r.ReleasedAt = requestPosted, &turn.ID, &now
	return store.SetRequest(ctx, tx, r)
}

// requeueSteers falls back to the queue for the steers bound to a run whose turn ended before a
// seal carried them (docs/agent-tools.md#delegation-and-conversations: with nothing running a steer
// queues): each becomes a queued turn of its sender, so a steer is never lost.
func (e *Engine) requeueSteers(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, now int64) error {
	steers, err := store.PendingSteers(ctx, tx, run.ID)
	if err != nil || len(steers) == 0 || run.ConversationID == nil {
		return err
	}
	c, err := store.LockConversation(ctx, tx, *run.ConversationID)
	if err != nil {
		return err
	}
	for i := range steers {
		if c.Status != ConversationActive {
			steers[i].Status = requestWithdrawn
			if err := store.SetRequest(ctx, tx, &steers[i]); err != nil {
				return err
			}
			continue
		}
		if err := e.postRequest(ctx, tx, fx, c, &steers[i], now); err != nil {
			return err
		}
	}
	return nil
}
