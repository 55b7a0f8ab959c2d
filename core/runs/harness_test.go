package runs_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/kernel"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// clock is a settable test clock: expiry cases move it instead of sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type harness struct {
	uploads *uploads.Service
	// profiles stores agents' profiles; profile is the configuration every agent newAgent adds
	// gets, "" for none.
	profiles *profiles.Service
	profile  string
	t        testing.TB
	s        *store.Store
	e        *runs.Engine
	conv     *conversations.Doors
	clock    *clock
	actor    *runs.Actor
	ctx      context.Context
	// watch wakes the doors' waiting reads; changed records every run status change the engine
	// reported, in order.
	watch     *conversations.RunWatch
	changedMu sync.Mutex
	changed   []string
}

type harnessOptions struct {
	kernel runs.KernelTools
	// profile is the profile configuration (docs/api.md#agent-profiles) of every agent
	// newAgent adds; "" leaves them the empty profile.
	profile       string
	models        *model.Catalog
	announcements runs.Announcements
	// config, when it names workers, replaces the harness's engine configuration.
	config runs.Config
}

func newHarness(t testing.TB, s *store.Store, o harnessOptions) *harness {
	t.Helper()
	ctx := context.Background()
	c := newClock()
	reg := registry.New()
	comp, err := declare.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	models := model.MustBuiltin()
	if o.models != nil {
		models = o.models
	}
	k := o.kernel
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
	opts := runs.Options{Store: s, Models: models, Registry: reg, Compiler: comp, Profiles: profs, Kernel: k, Now: c.Now, Memory: resolver,
		Config: runs.Config{Workers: 2, ModelTimeout: time.Minute}}
	if o.config.Workers > 0 {
		opts.Config = o.config
	}
	opts.Announcements = o.announcements
	up, err := uploads.New(s, uploads.Options{DetectContentType: http.DetectContentType, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	opts.Uploads = up
	h := &harness{t: t, s: s, clock: c, ctx: ctx, profiles: profs, profile: o.profile, uploads: up, watch: conversations.NewRunWatch()}
	opts.RunChanged = func(id string) {
		h.changedMu.Lock()
		h.changed = append(h.changed, id)
		h.changedMu.Unlock()
		h.watch.RunChanged(id)
	}
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
	h.e, h.conv = e, conversations.NewDoors(e, h.watch)
	h.actor = &runs.Actor{Kind: "user", ID: u.ID, PublicID: u.PublicID, Role: store.RoleOwner, WorkspaceID: w.ID, WorkspacePublicID: w.PublicID}
	return h
}

// newAgent adds an agent of the harness's workspace, stewarded by its user, with the harness's
// profile.
func (h *harness) newAgent(handle, displayName string) *store.Agent {
	h.t.Helper()
	a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: h.actor.WorkspaceID, Handle: handle, DisplayName: displayName, StewardUserID: h.actor.ID}
	if err := h.s.Write(h.ctx, func(tx *store.Tx) error { return store.InsertAgent(h.ctx, tx, a) }); err != nil {
		h.t.Fatal(err)
	}
	if h.profile != "" {
		cfg, err := jsonwire.DecodeText(h.profile)
		if err != nil {
			h.t.Fatal(err)
		}
		if _, err := h.profiles.PutConfiguration(h.ctx, profiles.Agent{ID: a.ID, WorkspaceID: a.WorkspaceID}, cfg); err != nil {
			h.t.Fatalf("profile of @%s: %v", handle, err)
		}
	}
	return a
}

// changes answers the run status changes the engine reported so far.
func (h *harness) changes() []string {
	h.changedMu.Lock()
	defer h.changedMu.Unlock()
	return append([]string(nil), h.changed...)
}

// replayOf is the idempotency of a request sent under key with body ("" key: none).
func replayOf(key string, body []byte) conversations.Replay {
	if key == "" {
		return conversations.Replay{}
	}
	return conversations.Replay{Key: key, Fingerprint: body}
}

// createRequest is the create door's request for a run object.
func createRequest(a *runs.Actor, run json.RawMessage, key string, body []byte) *conversations.CreateRunRequest {
	return &conversations.CreateRunRequest{Actor: a, Run: run, Replay: replayOf(key, body)}
}

// appendRequest is the append door's request for a body of steps and an expected revision.
func appendRequest(t testing.TB, a *runs.Actor, runID string, body []byte, key string) *conversations.AppendRequest {
	t.Helper()
	var b struct {
		Steps            json.RawMessage `json:"steps"`
		ExpectedRevision *int64          `json:"expected_revision"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("append body %s: %v", body, err)
	}
	return &conversations.AppendRequest{Actor: a, RunID: runID, Steps: b.Steps, ExpectedRevision: b.ExpectedRevision, Replay: replayOf(key, body)}
}

// resolveRequest is the resolution door's request for an answer's body; a body that is not one
// object rides as the door's refusal, for Resolve to answer at its place.
func resolveRequest(t testing.TB, a *runs.Actor, runID, key string, body []byte) *conversations.ResolveRequest {
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

// create posts a run object and fails the test on a refusal.
func (h *harness) create(run string) *conversations.Created {
	h.t.Helper()
	body := `{"run":` + run + `}`
	c, err := h.conv.CreateRun(h.ctx, createRequest(h.actor, json.RawMessage(run), "", []byte(body)))
	if err != nil {
		h.t.Fatalf("create: %v", err)
	}
	return c
}

// drain claims and evaluates kernel rows until none is runnable; it returns how many ran.
func (h *harness) drain() int {
	h.t.Helper()
	n := 0
	for i := 0; i < 10000; i++ {
		// Kernel tools first, in their one-transaction claim, as the workers do.
		ran, err := h.e.RunNextKernelTool(h.ctx)
		if err != nil {
			h.t.Fatalf("kernel tool: %v", err)
		}
		if ran {
			n++
			continue
		}
		c, err := h.e.ClaimKernel(h.ctx)
		if err != nil {
			h.t.Fatalf("claim: %v", err)
		}
		if c == nil {
			return n
		}
		if err := h.e.Evaluate(h.ctx, c); err != nil {
			h.t.Fatalf("evaluate %s: %v", c.Key, err)
		}
		n++
	}
	h.t.Fatal("drain: no end")
	return n
}

func (h *harness) run(id string) *conversations.RunDoc {
	h.t.Helper()
	d, err := h.conv.ReadRun(h.ctx, h.actor, id)
	if err != nil {
		h.t.Fatalf("read run: %v", err)
	}
	return d
}

func (h *harness) task(run, key string) *conversations.TaskDoc {
	h.t.Helper()
	d, err := h.conv.ReadTask(h.ctx, h.actor, run, key)
	if err != nil {
		h.t.Fatalf("read task %s: %v", key, err)
	}
	return d
}

// modelStep builds a run object with one model step.
func modelStep(prompt string, extra string) string {
	p, _ := json.Marshal(prompt)
	s := `{"steps":[{"model":{"model":"mock/scripted","prompt":` + string(p)
	if extra != "" {
		s += "," + extra
	}
	return s + `}}],"approval_mode":"bypass"}`
}

const memoryTools = `"kernel_tools":["nexus.memory.ls","nexus.memory.read","nexus.memory.grep","nexus.memory.write","nexus.memory.edit","nexus.memory.delete","nexus.models.list"]`
