package conversations_test

import (
	"net/http"
	"testing"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/runs/runstest"
	"github.com/nexuskernel/nexus/core/store"
)

// harness is the engine's test kit (core/runs/runstest): an engine, the kernel's tools and these
// doors on one store.
type harness = runstest.Harness

type harnessOptions struct {
	announcements runs.Announcements
	models        *model.Catalog
	config        runs.Config
	profile       string
}

func newHarness(t testing.TB, s *store.Store, o harnessOptions) *harness {
	t.Helper()
	return runstest.New(t, s, runstest.Options{Profile: o.profile, Models: o.models, Announcements: o.announcements, Config: o.config,
		DetectContentType: http.DetectContentType})
}

// conversationHarness adds an agent with the profile configuration (docs/api.md#agent-profiles;
// "" for the empty profile) and a conversation it answers.
func conversationHarness(t *testing.T, s *store.Store, profile string) (*harness, string) {
	t.Helper()
	h := newHarness(t, s, harnessOptions{profile: profile})
	return h, h.AgentConversation()
}

var (
	replayOf         = runstest.ReplayOf
	createRequest    = runstest.CreateRequest
	appendRequest    = runstest.AppendRequest
	resolveRequest   = runstest.ResolveRequest
	conversationBody = runstest.ConversationBody
	messageBody      = runstest.MessageBody
	modelStep        = runstest.ModelStep
	isCode           = runstest.IsCode
	script           = runstest.Script
	call             = runstest.Call
)

const (
	memoryTools = runstest.MemoryTools
	graphTools  = runstest.GraphTools
)

func deref[T any](p *T) T { return runstest.Deref(p) }

func second[T any](_ T, err error) error { return err }
