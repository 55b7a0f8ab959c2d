package runs_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/runs/runstest"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// harness is the engine's test kit (core/runs/runstest) under the short names these tests use.
type harness struct {
	*runstest.Harness
	t        testing.TB
	s        *store.Store
	e        *runs.Engine
	conv     *conversations.Doors
	clock    *runstest.Clock
	actor    *runs.Actor
	ctx      context.Context
	profiles *profiles.Service
	uploads  *uploads.Service
	watch    *conversations.RunWatch
}

type harnessOptions struct {
	kernel        runs.KernelTools
	profile       string
	models        *model.Catalog
	announcements runs.Announcements
	config        runs.Config
}

func newHarness(t testing.TB, s *store.Store, o harnessOptions) *harness {
	t.Helper()
	k := runstest.New(t, s, runstest.Options{Kernel: o.kernel, Profile: o.profile, Models: o.models, Announcements: o.announcements, Config: o.config,
		DetectContentType: http.DetectContentType})
	return &harness{Harness: k, t: k.T, s: k.S, e: k.E, conv: k.Conv, clock: k.Clock, actor: k.Actor, ctx: k.Ctx,
		profiles: k.Profiles, uploads: k.Uploads, watch: k.Watch}
}

func (h *harness) newAgent(handle, displayName string) *store.Agent {
	h.t.Helper()
	return h.NewAgent(handle, displayName)
}

func (h *harness) create(run string) *conversations.Created {
	h.t.Helper()
	return h.Create(run)
}

func (h *harness) drain() int {
	h.t.Helper()
	return h.Drain()
}

func (h *harness) run(id string) *conversations.RunDoc {
	h.t.Helper()
	return h.Run(id)
}

func (h *harness) task(run, key string) *conversations.TaskDoc {
	h.t.Helper()
	return h.Task(run, key)
}

func (h *harness) post(conv, text, extra string) *conversations.Posted {
	h.t.Helper()
	return h.Post(conv, text, extra)
}

var (
	replayOf         = runstest.ReplayOf
	createRequest    = runstest.CreateRequest
	conversationBody = runstest.ConversationBody
	messageBody      = runstest.MessageBody
	modelStep        = runstest.ModelStep
	isCode           = runstest.IsCode
)

const memoryTools = runstest.MemoryTools

func (h *harness) member(handle string) *runs.Actor {
	h.t.Helper()
	return h.Member(handle)
}

func (h *harness) sweep() {
	h.t.Helper()
	h.Sweep()
}

func (h *harness) turns(conv string) []*conversations.TurnDoc {
	h.t.Helper()
	return h.Turns(conv)
}

func (h *harness) resolve(run, key, body string) *conversations.Resolution {
	h.t.Helper()
	return h.Resolve(run, key, body)
}

// conversationHarness adds an agent with the profile configuration (docs/api.md#agent-profiles;
// "" for the empty profile) and a conversation it answers.
func conversationHarness(t *testing.T, s *store.Store, profile string) (*harness, string) {
	t.Helper()
	h := newHarness(t, s, harnessOptions{profile: profile})
	return h, h.AgentConversation()
}

type sealedRequest = runstest.SealedRequest

func readRequest(t *testing.T, h *harness, run, key string) sealedRequest {
	t.Helper()
	return h.SealedRequest(run, key)
}

var (
	script = runstest.Script
	call   = runstest.Call
)

const graphTools = runstest.GraphTools

func deref[T any](p *T) T { return runstest.Deref(p) }

func (h *harness) conversation() string {
	h.t.Helper()
	return h.Conversation()
}
