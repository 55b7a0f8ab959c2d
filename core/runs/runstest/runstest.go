// Package runstest is the run engine's test kit: an engine on a store with the kernel's tools,
// the agents' profiles, uploads and the member doors above it (core/conversations), driven by hand
// (Harness.Drain runs every runnable kernel row) on a settable clock, for the engine's tests
// (core/runs) and the doors' (core/conversations). Bodies are written as the HTTP door receives
// them and decoded as it decodes them, so that a test reads like the request it stands for.
//
// It is imported by tests only, and builds on the packages it drives; nothing below it imports
// it.
package runstest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/kernel"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Clock is a settable test clock: expiry cases move it instead of sleeping.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Harness is an engine and its doors on one store, with a workspace whose owner is Actor.
type Harness struct {
	Uploads *uploads.Service
	// Profiles stores agents' profiles; Profile is the configuration every agent NewAgent adds
	// gets, "" for none.
	Profiles *profiles.Service
	Profile  string
	T        testing.TB
	S        *store.Store
	E        *runs.Engine
	Conv     *conversations.Doors
	Clock    *Clock
	Actor    *runs.Actor
	Ctx      context.Context
	// Watch wakes the doors' waiting reads, following Events, the engine's event feed.
	Watch  *conversations.RunWatch
	Events *events.Bus
	// changes hears the feed's run status events for Changes; changedMu guards changed, what
	// it heard so far.
	changes   *events.Subscription
	changedMu sync.Mutex
	changed   []string
	// agents are the public ids of the agents NewAgent added, in order.
	agents []string
}

// Options configure a Harness.
type Options struct {
	Kernel runs.KernelTools
	// Profile is the profile configuration (docs/api.md#agent-profiles) of every agent
	// NewAgent adds; "" leaves them the empty profile.
	Profile       string
	Models        *model.Catalog
	Announcements runs.Announcements
	// Config, when it names workers, replaces the harness's engine configuration.
	Config runs.Config
	// DetectContentType detects an upload's type from its first bytes (net/http's
	// DetectContentType, which the test passes: only core/httpapi knows HTTP).
	DetectContentType func([]byte) string
}

// New builds a harness on s: the registry and compiler, the built-in models (or o.Models), the
// kernel's tools (or o.Kernel), profiles, uploads, the engine (not started: Drain runs it) and
// its doors, and a workspace "default" owned by the user ana.
func New(t testing.TB, s *store.Store, o Options) *Harness {
	t.Helper()
	ctx := context.Background()
	c := NewClock()
	reg := registry.New()
	comp, err := declare.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	models := model.MustBuiltin()
	if o.Models != nil {
		models = o.Models
	}
	k := o.Kernel
	resolver := kmemory.NewResolver(s, conversations.ConversationStates{})
	if k == nil {
		k = kernel.New(kernel.Options{
			Memory:       &kernel.Memory{Provider: kmemory.New(s), Scopes: kernel.MemoryScopes{Resolver: resolver}, Now: c.Now},
			Models:       &kernel.Models{Catalog: models},
			Discovery:    &kernel.Discovery{Compiler: comp},
			Runners:      &kernel.Runners{},
			Skill:        &kernel.Skill{Store: kmemory.New(s), Scopes: kernel.MemoryScopes{Resolver: resolver}},
			Graph:        &kernel.Graph{Compiler: comp, Models: models},
			Human:        &kernel.Human{},
			Conversation: &kernel.Conversation{},
		})
	}
	profs, err := profiles.New(profiles.Options{Store: s, Compiler: comp, Models: models, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	opts := runs.Options{Store: s, Conversations: conversations.Hosted{}, Models: models, Registry: reg, Compiler: comp, Profiles: profs, Kernel: k, Now: c.Now, Memory: resolver,
		Config: runs.Config{Workers: 2, ModelTimeout: time.Minute}}
	if o.Config.Workers > 0 {
		opts.Config = o.Config
	}
	opts.Announcements = o.Announcements
	up, err := uploads.New(s, uploads.Options{DetectContentType: o.DetectContentType, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	opts.Uploads = up
	bus := events.New()
	opts.Events = bus
	h := &Harness{T: t, S: s, Clock: c, Ctx: ctx, Profiles: profs, Profile: o.Profile, Uploads: up, Watch: conversations.NewRunWatch(bus), Events: bus}
	h.changes, _, _ = bus.SubscribeMembers(events.MemberFilter{SkipDeltas: true}, false, 0)
	t.Cleanup(h.changes.Close)
	t.Cleanup(h.Watch.Close)
	e, err := runs.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	now := c.Now().UnixMilli()
	u := &store.User{PublicID: store.NewPublicID(), Handle: "ana", DisplayName: "Ana", CreatedAt: now}
	w := &store.Workspace{PublicID: store.NewPublicID(), Handle: "default", Name: "Default", CreatedAt: now}
	err = s.Write(ctx, func(tx *store.Tx) error {
		if err := store.InsertUser(ctx, tx, u); err != nil {
			return err
		}
		if err := store.InsertWorkspace(ctx, tx, w); err != nil {
			return err
		}
		return store.InsertMembership(ctx, tx, w.ID, u.ID, store.RoleOwner, now)
	})
	if err != nil {
		t.Fatal(err)
	}
	h.E, h.Conv = e, conversations.NewDoors(e, h.Watch)
	h.Actor = &runs.Actor{Kind: "user", ID: u.ID, PublicID: u.PublicID, Role: store.RoleOwner, WorkspaceID: w.ID, WorkspacePublicID: w.PublicID}
	return h
}

// NewAgent adds an agent of the harness's workspace, stewarded by its user, with the harness's
// profile.
func (h *Harness) NewAgent(handle, displayName string) *store.Agent {
	h.T.Helper()
	a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: h.Actor.WorkspaceID, Handle: handle, DisplayName: displayName, StewardUserID: h.Actor.ID}
	if err := h.S.Write(h.Ctx, func(tx *store.Tx) error { return store.InsertAgent(h.Ctx, tx, a) }); err != nil {
		h.T.Fatal(err)
	}
	h.agents = append(h.agents, a.PublicID)
	if h.Profile != "" {
		cfg, err := jsonwire.DecodeText(h.Profile)
		if err != nil {
			h.T.Fatal(err)
		}
		if _, err := h.Profiles.PutConfiguration(h.Ctx, profiles.Agent{ID: a.ID, WorkspaceID: a.WorkspaceID}, cfg); err != nil {
			h.T.Fatalf("profile of @%s: %v", handle, err)
		}
	}
	return a
}

// Changes answers the run status changes the engine published so far, each as
// "<run public id> <status>", in order.
func (h *Harness) Changes() []string {
	h.changedMu.Lock()
	defer h.changedMu.Unlock()
	evs, lost := h.changes.Take()
	if lost {
		h.T.Fatal("the harness's subscription lost events")
	}
	for _, ev := range evs {
		if s, ok := ev.(events.RunStatus); ok {
			h.changed = append(h.changed, s.Run+" "+s.Status)
		}
	}
	return append([]string(nil), h.changed...)
}

// ReplayOf is the idempotency of a request sent under key with body ("" key: none).
func ReplayOf(key string, body []byte) conversations.Replay {
	if key == "" {
		return conversations.Replay{}
	}
	return conversations.Replay{Key: key, Fingerprint: body}
}

// CreateRequest is the create door's request for a run object, decoded as the HTTP door decodes
// a body's "run".
func CreateRequest(a *runs.Actor, run json.RawMessage, key string, body []byte) *conversations.CreateRunRequest {
	req := &conversations.CreateRunRequest{Actor: a, Replay: ReplayOf(key, body)}
	mustDecode(run, &req.Run)
	return req
}

// AppendRequest is the append door's request for a body of steps and an expected revision; steps
// that are no array ride as the door's refusal, as the HTTP door sends them.
func AppendRequest(t testing.TB, a *runs.Actor, runID string, body []byte, key string) *conversations.AppendRequest {
	t.Helper()
	var b struct {
		Steps            json.RawMessage `json:"steps"`
		ExpectedRevision *int64          `json:"expected_revision"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("append body %s: %v", body, err)
	}
	req := &conversations.AppendRequest{Actor: a, RunID: runID, ExpectedRevision: b.ExpectedRevision, Replay: ReplayOf(key, body)}
	req.Steps, req.Invalid = steps.DecodeList(b.Steps)
	return req
}

// ConversationBody is a create's conversation as the HTTP door decodes a body's "conversation".
func ConversationBody(raw string) *conversations.NewConversation {
	c := &conversations.NewConversation{}
	mustDecode([]byte(raw), c)
	return c
}

// MessageBody is a message as the HTTP door decodes a body's "message".
func MessageBody(raw string) conversations.Message {
	var m conversations.Message
	mustDecode([]byte(raw), &m)
	return m
}

// mustDecode decodes a test's JSON into a typed body; JSON that does not parse is the test's
// mistake.
func mustDecode(raw []byte, dst any) {
	if err := json.Unmarshal(raw, dst); err != nil {
		panic(fmt.Sprintf("test body %s: %v", raw, err))
	}
}

// ResolveRequest is the resolution door's request for an answer's body; a body that is not one
// object rides as the door's refusal, for Resolve to answer at its place.
func ResolveRequest(t testing.TB, a *runs.Actor, runID, key string, body []byte) *conversations.ResolveRequest {
	t.Helper()
	req := &conversations.ResolveRequest{Actor: a, RunID: runID, TaskKey: key}
	var members jsonwire.Members
	if len(body) > 0 {
		var err error
		if members, err = jsonwire.SplitObject(body); err != nil {
			req.Invalid = refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "The request body must be a JSON object.")
			return req
		}
	}
	req.Result = envelope.Decode(members)
	return req
}

// Create posts a run object and fails the test on a refusal.
func (h *Harness) Create(run string) *conversations.Created {
	h.T.Helper()
	body := `{"run":` + run + `}`
	c, err := h.Conv.CreateRun(h.Ctx, CreateRequest(h.Actor, json.RawMessage(run), "", []byte(body)))
	if err != nil {
		h.T.Fatalf("create: %v", err)
	}
	return c
}

// Post posts a message of text (with extra fields of the message object, "" for none) and fails
// the test on a refusal.
func (h *Harness) Post(conv, text string, extra string) *conversations.Posted {
	h.T.Helper()
	t, _ := json.Marshal(text)
	msg := `{"text":` + string(t)
	if extra != "" {
		msg += "," + extra
	}
	msg += "}"
	p, err := h.Conv.PostMessage(h.Ctx, &conversations.PostMessageRequest{Actor: h.Actor, ConversationID: conv, Message: MessageBody(msg),
		Replay: ReplayOf("", []byte(`{"message":`+msg+`}`))})
	if err != nil {
		h.T.Fatalf("post: %v", err)
	}
	return p
}

// Drain claims and evaluates kernel rows until none is runnable; it returns how many ran.
func (h *Harness) Drain() int {
	h.T.Helper()
	n := 0
	for i := 0; i < 10000; i++ {
		// Kernel tools first, in their one-transaction claim, as the workers do.
		ran, err := h.E.RunNextKernelTool(h.Ctx)
		if err != nil {
			h.T.Fatalf("kernel tool: %v", err)
		}
		if ran {
			n++
			continue
		}
		c, err := h.E.ClaimKernel(h.Ctx)
		if err != nil {
			h.T.Fatalf("claim: %v", err)
		}
		if c == nil {
			return n
		}
		if err := h.E.Evaluate(h.Ctx, c); err != nil {
			h.T.Fatalf("evaluate %s: %v", c.Key, err)
		}
		n++
	}
	h.T.Fatal("drain: no end")
	return n
}

// Run reads a run and fails the test on a refusal.
func (h *Harness) Run(id string) *conversations.RunDoc {
	h.T.Helper()
	d, err := h.Conv.ReadRun(h.Ctx, h.Actor, id)
	if err != nil {
		h.T.Fatalf("read run: %v", err)
	}
	return d
}

// Task reads a run's task and fails the test on a refusal.
func (h *Harness) Task(run, key string) *conversations.TaskDoc {
	h.T.Helper()
	d, err := h.Conv.ReadTask(h.Ctx, h.Actor, run, key)
	if err != nil {
		h.T.Fatalf("read task %s: %v", key, err)
	}
	return d
}

// ModelStep builds a run object with one model step on mock/scripted, approval mode bypass;
// extra adds fields to the step ("" for none).
func ModelStep(prompt string, extra string) string {
	p, _ := json.Marshal(prompt)
	s := `{"steps":[{"model":{"model":"mock/scripted","prompt":` + string(p)
	if extra != "" {
		s += "," + extra
	}
	return s + `}}],"approval_mode":"bypass"}`
}

// MemoryTools imports the kernel's memory tools and models_list into a model step.
const MemoryTools = `"kernel_tools":["nexus.memory.ls","nexus.memory.read","nexus.memory.grep","nexus.memory.write","nexus.memory.edit","nexus.memory.delete","nexus.models.list"]`

// IsCode reports whether err is a refusal of word code.
func IsCode(err error, code string) bool {
	r, ok := refusal.As(err)
	return ok && r.Code == code
}

// Script is a mock script under a one-line brief: rounds[i] holds round i+1's directives.
func Script(brief string, rounds ...[]string) string {
	var b strings.Builder
	b.WriteString(brief + "\n!mock")
	for i, r := range rounds {
		b.WriteString("\nround " + strconv.Itoa(i+1))
		for _, d := range r {
			b.WriteString("\n" + d)
		}
	}
	return b.String()
}

// Call is a script's call directive with args encoded as one line of JSON.
func Call(name string, args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return "call " + name + " " + string(b)
}

// GraphTools declares the orchestration tools and a memory tool for the branches to call.
const GraphTools = `"kernel_tools":["nexus.graph.delegate_task","nexus.graph.wait","nexus.human.ask","nexus.memory.ls"]`

// SealedRequest is the part of a sealed request the tests read: its entries' roles and texts.
type SealedRequest struct {
	Entries []struct {
		Role    string `json:"role"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"entries"`
}

// SealedRequest reads the request a round sealed.
func (h *Harness) SealedRequest(run, key string) SealedRequest {
	h.T.Helper()
	b, err := h.Conv.ReadRequest(h.Ctx, h.Actor, run, key)
	if err != nil {
		h.T.Fatalf("request %s: %v", key, err)
	}
	var doc struct {
		Request SealedRequest `json:"request"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		h.T.Fatal(err)
	}
	return doc.Request
}

// Member adds a plain member of the harness's workspace, without standing on its runs.
func (h *Harness) Member(handle string) *runs.Actor {
	h.T.Helper()
	now := h.Clock.Now().UnixMilli()
	u := &store.User{PublicID: store.NewPublicID(), Handle: handle, DisplayName: handle, CreatedAt: now}
	err := h.S.Write(h.Ctx, func(tx *store.Tx) error {
		if err := store.InsertUser(h.Ctx, tx, u); err != nil {
			return err
		}
		return store.InsertMembership(h.Ctx, tx, h.Actor.WorkspaceID, u.ID, store.RoleMember, now)
	})
	if err != nil {
		h.T.Fatal(err)
	}
	return &runs.Actor{Kind: "user", ID: u.ID, PublicID: u.PublicID, Role: store.RoleMember, WorkspaceID: h.Actor.WorkspaceID,
		WorkspacePublicID: h.Actor.WorkspacePublicID}
}

// Resolve answers an await with body and fails the test on a refusal.
func (h *Harness) Resolve(run, key, body string) *conversations.Resolution {
	h.T.Helper()
	res, err := h.Conv.Resolve(h.Ctx, ResolveRequest(h.T, h.Actor, run, key, []byte(body)))
	if err != nil {
		h.T.Fatalf("resolve %s: %v", key, err)
	}
	return res
}

// Sweep runs one pass of the sweeper.
func (h *Harness) Sweep() {
	h.T.Helper()
	if _, err := h.E.Sweep(h.Ctx); err != nil {
		h.T.Fatal(err)
	}
}

// Turns reads a conversation's turns, oldest first.
func (h *Harness) Turns(conv string) []*conversations.TurnDoc {
	h.T.Helper()
	page, err := h.Conv.History(h.Ctx, h.Actor, conv, 0, 100)
	if err != nil {
		h.T.Fatal(err)
	}
	return page.Turns
}

// AgentConversation adds the agent bot, with the harness's profile, and a conversation it
// answers, and answers the conversation's id.
func (h *Harness) AgentConversation() string {
	h.T.Helper()
	a := h.NewAgent("bot", "Bot")
	c, err := h.Conv.CreateConversation(h.Ctx, h.Actor, ConversationBody(`{"answering_agent_public_id":"`+a.PublicID+`","title":"Notes"}`))
	if err != nil {
		h.T.Fatal(err)
	}
	return c.PublicID
}

// Conversation opens another conversation answered by the first agent NewAgent added.
func (h *Harness) Conversation() string {
	h.T.Helper()
	if len(h.agents) == 0 {
		h.T.Fatal("Conversation: no agent added")
	}
	c, err := h.Conv.CreateConversation(h.Ctx, h.Actor, &conversations.NewConversation{AnsweringAgentPublicID: h.agents[0]})
	if err != nil {
		h.T.Fatal(err)
	}
	return c.PublicID
}

// AskBrief is a branch that asks the person and then answers with what it heard.
const AskBrief = "Ask.\n!mock\nround 1\ncall ask {\"prompt\":\"Ship it?\"}\nround 2\nsay asked"

// Deref is *p, or T's zero value for a nil p.
func Deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}
