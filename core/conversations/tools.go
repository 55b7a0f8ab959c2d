package conversations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// The conversation tools (docs/agent-tools.md#delegation-and-conversations): spawn, send, status
// and cancel act on conversations from inside a conversation-hosted run. core/kernel checks their
// arguments and writes their receipts; this file resolves addressees and writes the rows, inside
// the kernel call's settling transaction (the call's Tx, KernelCall.Engine).
//
// Lock order (docs/development.md#how-the-kernel-runs-work). A kernel call runs under its own run's
// lock, and spawn, send and cancel then write into another conversation: a brand-new child
// conversation (which nobody else can hold yet), or an existing addressee whose conversation row,
// and for cancel whose runs, are locked after the caller's run. That inverts the documented order
// for those transitions; a PostgreSQL deadlock it causes is retried by Engine.write (the store
// answers it as store.ErrRetryable), so the inversion costs a retry, never a hang. The reply
// travelling back the other way never takes the caller's lock: the child's transaction records
// the sending run in its effects, and a follow-up transaction after the commit advances it (and
// the sweeper's poll settles any observer a crash left behind).
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

// refused is a conversation tool's refusal, the one refusal type (core/refusal): its word (Code)
// and detail sentence (Message), which core/kernel words as the tool's error result. It never
// reaches an HTTP writer, so its kind is only the one the word would have at a door.
func refused(word, format string, args ...any) *refusal.Error {
	return refusal.Newf(refusal.Unprocessable, word, format, args...)
}

// Caller is the conversation tools' hold on a kernel call's settling transaction: the engine's
// Tx (KernelCall.Engine), under the calling run's lock, and that run.
type Caller struct {
	x   *runs.Tx
	Tx  *store.Tx
	run *store.Run
}

// On is the conversation tools of the kernel call whose engine transaction is x.
func On(x *runs.Tx) *Caller { return &Caller{x: x, Tx: x.Tx, run: x.Run()} }

// Now is the engine's clock, which deliver_in is resolved against.
func (c *Caller) Now() time.Time { return c.x.Now() }

// Hosted reports whether the calling run belongs to a conversation
// (docs/agent-tools.md#delegation-and-conversations).
func (c *Caller) Hosted() bool { return c.run.ConversationID != nil }

func (c *Caller) senderConversation(ctx context.Context) (*store.Conversation, error) {
	if c.run.ConversationID == nil {
		return nil, errors.New("conversations: a conversation tool ran on a standalone run")
	}
	return store.ConversationByID(ctx, c.Tx, *c.run.ConversationID)
}

func (c *Caller) senderAgent() string { return deref(c.run.AnsweringAgentPublicID) }

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
func (c *Caller) Resolve(ctx context.Context, to string, mode Addressing) (*store.Conversation, *refusal.Error, error) {
	s, err := c.senderConversation(ctx)
	if err != nil {
		return nil, nil, err
	}
	lower := strings.ToLower(strings.TrimSpace(to))
	target, err := store.ChildByLabel(ctx, c.Tx, s.ID, lower)
	if errors.Is(err, store.ErrNotFound) {
		target = nil
		if store.IsPublicID(lower) {
			t, err := store.ConversationByPublicID(ctx, c.Tx, lower)
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
	above, err := isAncestor(ctx, c.Tx, s, target.ID)
	if err != nil {
		return nil, nil, err
	}
	if above && mode == AddressSend {
		waiting, err := store.ParentWaitingOn(ctx, c.Tx, s.ID)
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
func (c *Caller) mayWrite(s, target *store.Conversation) bool {
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
func (c *Caller) State(ctx context.Context, target *store.Conversation) (*ConversationState, error) {
	running, err := store.ConversationHasLiveRun(ctx, c.Tx, target.ID)
	if err != nil {
		return nil, err
	}
	open, err := store.OpenTurns(ctx, c.Tx, target.ID)
	if err != nil {
		return nil, err
	}
	st := &ConversationState{PublicID: target.PublicID, Running: running}
	for i := range open {
		if open[i].Status == runs.TurnQueued {
			st.Queued++
		}
	}
	agent, err := store.AgentInWorkspace(ctx, c.Tx, target.WorkspaceID, target.AnsweringAgentPublicID)
	if err != nil {
		return nil, err
	}
	st.AnsweredBy = "@" + agent.Handle
	if target.ID != *c.run.ConversationID {
		if st.WaitingForYou, err = store.QueuedTurnsFrom(ctx, c.Tx, *c.run.ConversationID, target.PublicID); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// answerer resolves an agent argument (spawn.agent, send.agent): @handle or public id. where is
// "" for spawn and the addressee's public id for send, whose answerer_not_eligible sentence
// names it.
func (c *Caller) answerer(ctx context.Context, ref, where string) (*store.AgentRow, *refusal.Error, error) {
	var a *store.AgentRow
	var err error
	handle, id := "", ""
	if h, ok := strings.CutPrefix(ref, "@"); ok {
		handle = h
		a, err = store.AgentByHandle(ctx, c.Tx, c.run.WorkspaceID, h)
	} else {
		id = strings.ToLower(ref)
		a, err = store.AgentInWorkspace(ctx, c.Tx, c.run.WorkspaceID, id)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, nil, err
	}
	notEligible := func() *refusal.Error {
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
	user, err := store.WorkspaceUserByRef(ctx, c.Tx, c.run.WorkspaceID, handle, id)
	if err != nil {
		return nil, nil, err
	}
	if user {
		return nil, notEligible(), nil
	}
	agents, err := store.AgentsOfWorkspace(ctx, c.Tx, c.run.WorkspaceID)
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
func (c *Caller) modelRefused(ref string, hasTools bool) (*refusal.Error, error) {
	if err := c.x.CheckModel(ref, hasTools); err != nil {
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
func profileRefused(err error) (*refusal.Error, error) {
	if rf, ok := refusal.As(err); ok {
		return refusal.New(refusal.Unprocessable, rf.Code, rf.Message), nil
	}
	return nil, err
}

// replyModel is the model a brief or send's turn runs on
// (docs/agent-tools.md#delegation-and-conversations): the answerer's default model; else, when it
// has replied there before, the model it used; else the explicit selection, else the calling
// round's model, else the deployment default.
func (c *Caller) replyModel(ctx context.Context, conv *store.Conversation, agentPublicID string, prof *runs.AcceptedProfile, explicit, round string) (string, error) {
	if prof.DefaultModel != "" {
		return prof.DefaultModel, nil
	}
	if conv.ID != 0 {
		prev, err := store.PreviousTurnModel(ctx, c.Tx, conv.ID, agentPublicID)
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
	return c.x.DefaultModel(), nil
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
func (c *Caller) Spawn(ctx context.Context, callKey string, sp *SpawnSpec) (*Spawned, *refusal.Error, error) {
	if prior, err := store.RequestByCall(ctx, c.Tx, c.run.ID, callKey); err == nil {
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
		if agent, err = store.AgentInWorkspace(ctx, c.Tx, c.run.WorkspaceID, c.senderAgent()); err != nil {
			return nil, nil, err
		}
	} else {
		var rf *refusal.Error
		if agent, rf, err = c.answerer(ctx, sp.Agent, ""); rf != nil || err != nil {
			return nil, rf, err
		}
	}
	if rf, err := c.privateRefusal(ctx, agent); rf != nil || err != nil {
		return nil, rf, err
	}
	var label *string
	if sp.Label != "" {
		taken, err := store.ChildByLabel(ctx, c.Tx, s.ID, sp.Label)
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
		if !c.x.EligibleRunner(ctx, c.run.WorkspaceID, id) {
			return nil, refused(WordRunnerNotEligible, "Runner %s is not available to the answering agent.", sp.Runner), nil
		}
		runner = &id
	case !sp.RunnerSet && c.run.DefaultRunnerExecutorPublicID != nil:
		// An inherited Runner the answerer may not use is not refused: the child has none.
		if c.x.EligibleRunner(ctx, c.run.WorkspaceID, *c.run.DefaultRunnerExecutorPublicID) {
			runner = c.run.DefaultRunnerExecutorPublicID
		}
	}
	now := c.x.NowMS()
	child := &store.Conversation{PublicID: store.NewPublicID(), WorkspaceID: c.run.WorkspaceID, WorkspacePublicID: c.run.WorkspacePublicID,
		AnsweringAgentID: agent.ID, AnsweringAgentPublicID: agent.PublicID, CreatedByKind: store.KindAgent, CreatedByPublicID: c.senderAgent(),
		DefaultRunnerExecutorPublicID: runner, ParentConversationID: &s.ID, Label: label, Status: runs.ConversationActive,
		CreatedAt: now, UpdatedAt: now}
	prof, err := c.x.AcceptProfile(ctx, child, nil)
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
	if err := store.InsertConversation(ctx, c.Tx, child); err != nil {
		return nil, nil, err
	}
	if child, err = store.LockConversation(ctx, c.Tx, child.ID); err != nil {
		return nil, nil, err
	}
	sender := s.PublicID
	post := &TurnPost{PublicID: store.NewPublicID(), AuthorKind: store.KindAgent, AuthorPublicID: c.senderAgent(), SenderConversation: &sender,
		Text: sp.Prompt, Model: ref, AgentID: agent.ID, AgentPublicID: agent.PublicID, Profile: prof}
	turn, err := postTurn(ctx, c.x, child, post, now)
	if err != nil {
		return nil, nil, err
	}
	req := &store.ConversationRequest{PublicID: turn.PublicID, ReceiptKey: RequestSpawn + ":" + c.run.PublicID + ":" + callKey,
		RunID: c.run.ID, CallKey: callKey, Kind: RequestSpawn, Delivery: DeliveryQueued, ConversationID: child.ID,
		SenderConversationID: s.ID, AuthorPublicID: c.senderAgent(), AnsweringAgentID: agent.ID, InputText: sp.Prompt, Model: ref,
		TurnID: &turn.ID, ReplyOwed: true, Status: RequestPosted, Receipt: "{}", CreatedAt: now, ReleasedAt: &now}
	if err := store.InsertConversationRequest(ctx, c.Tx, req); err != nil {
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
func (c *Caller) spawnedOf(ctx context.Context, r *store.ConversationRequest) (*Spawned, error) {
	child, err := store.ConversationByID(ctx, c.Tx, r.ConversationID)
	if err != nil {
		return nil, err
	}
	agent, err := store.AgentInWorkspace(ctx, c.Tx, child.WorkspaceID, child.AnsweringAgentPublicID)
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
	key := runs.ChildKey(callKey, runs.RoleDelegation, 1)
	return &store.Task{TaskTrace: store.TaskTrace{
		Key: key, Kind: runs.KindDelegation, Status: runs.StatusDispatched, Origin: runs.OriginKernel,
		OnFailure: runs.OnFailureAbsorb, Lifetime: lifetime, Wake: wake, Detached: true,
		Visibility: runs.VisibilityHidden, LineageRoot: key, ReadyAt: &now, DispatchedAt: &now,
	}}
}

// SpawnAwait is the kernel-held await C-spawn-1 a waited spawn places
// (docs/agent-tools.md#delegation-and-conversations): no token, dispatched, off every inbox, a
// fixed one-hour clock, absorbing.
func SpawnAwait(callKey string) *store.Task {
	key := runs.ChildKey(callKey, runs.RoleSpawn, 1)
	clock := SpawnAwaitClock.Milliseconds()
	return &store.Task{TaskTrace: store.TaskTrace{
		Key: key, Kind: runs.KindAwait, Status: runs.StatusDispatched, Origin: runs.OriginKernel,
		OnFailure: runs.OnFailureAbsorb, Lifetime: runs.LifetimeTurn, Wake: runs.WakeAuto,
		Visibility: runs.VisibilityHidden, LineageRoot: key, AwaitKind: ptr(runs.AwaitSpawn),
		TimeoutMS: &clock,
	}}
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
func (c *Caller) Send(ctx context.Context, callKey string, sp *SendSpec) (*Sent, *refusal.Error, error) {
	if prior, err := store.RequestByCall(ctx, c.Tx, c.run.ID, callKey); err == nil {
		var out Sent
		if err := json.Unmarshal([]byte(prior.Receipt), &out); err != nil {
			return nil, nil, fmt.Errorf("conversations: the receipt of %s: %w", prior.ReceiptKey, err)
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
	} else if agent, err = store.AgentInWorkspace(ctx, c.Tx, target.WorkspaceID, target.AnsweringAgentPublicID); err != nil {
		return nil, nil, err
	}
	if rf, err := c.privateRefusal(ctx, agent); rf != nil || err != nil {
		return nil, rf, err
	}
	prof, err := c.x.AcceptProfileFor(ctx, target, agent.ID, agent.PublicID, nil)
	if err != nil {
		rf, err := profileRefused(err)
		return nil, rf, err
	}
	if sp.Model != "" {
		if rf, err := c.modelRefused(sp.Model, prof.Frozen.HasTools); rf != nil || err != nil {
			return nil, rf, err
		}
	}
	if target, err = store.LockConversation(ctx, c.Tx, target.ID); err != nil {
		return nil, nil, err
	}
	now := c.x.NowMS()
	if sp.DeliverAt != 0 && (sp.DeliverAt <= now || sp.DeliverAt > now+MaxScheduleAhead.Milliseconds()) {
		return nil, refused(WordScheduleOutOfRange, "the delivery time must be in the future and at most %d days ahead.",
			int(MaxScheduleAhead/(24*time.Hour))), nil
	}
	if target.Status == runs.ConversationArchived {
		return nil, refusal.New(refusal.Unprocessable, CodeConversationArchived, "The conversation is archived."), nil
	}
	ref, err := c.replyModel(ctx, target, agent.PublicID, prof, sp.Model, sp.RoundModel)
	if err != nil {
		return nil, nil, err
	}
	open, err := store.OpenTurns(ctx, c.Tx, target.ID)
	if err != nil {
		return nil, nil, err
	}
	req := &store.ConversationRequest{PublicID: store.NewPublicID(), ReceiptKey: RequestSend + ":" + c.run.PublicID + ":" + callKey,
		RunID: c.run.ID, CallKey: callKey, Kind: RequestSend, Delivery: DeliveryQueued, ConversationID: target.ID,
		SenderConversationID: s.ID, AuthorPublicID: c.senderAgent(), AnsweringAgentID: agent.ID, InputText: sp.Message, Model: ref,
		Status: RequestPosted, CreatedAt: now}
	var running *store.Turn
	for i := range open {
		if open[i].Status == runs.TurnRunning {
			running = &open[i]
		}
	}
	switch {
	case sp.Steer && running != nil:
		req.Delivery, req.Status, req.SteerRunID = DeliverySteering, RequestPending, &running.RunID
	case sp.DeliverAt != 0:
		req.Delivery, req.Status, req.DeliverAt = DeliveryScheduled, RequestPending, &sp.DeliverAt
	default:
		queued := 0
		for i := range open {
			if open[i].Status == runs.TurnQueued {
				queued++
			}
		}
		if queued >= MaxQueuedTurns {
			return nil, refusal.Newf(refusal.Unprocessable, CodeInputQueueFull, "The conversation already has %d queued turns.", MaxQueuedTurns), nil
		}
		sender := s.PublicID
		turn, err := postTurn(ctx, c.x, target, &TurnPost{PublicID: req.PublicID, AuthorKind: store.KindAgent,
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
	if err := store.InsertConversationRequest(ctx, c.Tx, req); err != nil {
		return nil, nil, err
	}
	if req.ReplyOwed {
		out.Rows = append(out.Rows, DelegationRow(callKey, runs.LifetimeConversation, sp.Wake, now))
	}
	return out, nil, nil
}

// privateRefusal applies the workspace's agent messaging policy to a new request
// (docs/agent-tools.md#delegation-and-conversations): a private agent accepts new requests only
// from itself (its own spawned copies included); the sender is the calling run's answering agent.
// An agent absent from the policy is public.
func (c *Caller) privateRefusal(ctx context.Context, recipient *store.AgentRow) (*refusal.Error, error) {
	if recipient.PublicID == c.senderAgent() {
		return nil, nil
	}
	private, err := store.AgentMessagingPrivate(ctx, c.Tx, c.run.WorkspaceID, recipient.PublicID)
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
func (c *Caller) Cancel(ctx context.Context, target *store.Conversation) (bool, error) {
	reqs, err := store.RequestsOfRunIn(ctx, c.Tx, c.run.ID, target.ID)
	if err != nil {
		return false, err
	}
	by := runs.Member{Kind: store.KindAgent, PublicID: c.senderAgent()}
	seen := map[int64]bool{c.run.ID: true}
	any := false
	for i := range reqs {
		did, err := cancelRequest(ctx, c.x, &reqs[i], by, seen)
		if err != nil {
			return false, err
		}
		any = any || did
	}
	return any, nil
}
