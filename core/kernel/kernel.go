package kernel

import (
	"context"
	"fmt"
	"time"

	"github.com/nexuskernel/nexus/core/declare"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
)

// Handler runs one kernel tool call.
type Handler func(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error)

// Tools is the dispatch table: canonical name → handler. It implements runs.KernelTools.
type Tools struct {
	handlers map[string]Handler
}

var _ runs.KernelTools = (*Tools)(nil)

// Options are the services the families run over; a nil service leaves its family without
// handlers.
type Options struct {
	Memory    *Memory
	Models    *Models
	Discovery *Discovery
	Runners   *Runners
	Skill     *Skill
	// Graph runs delegate_task and wait; Human runs ask.
	Graph *Graph
	Human *Human
	// History runs session_read and session_search.
	History *History
	// Conversation runs spawn, send, status and cancel.
	Conversation *Conversation
}

// New builds the dispatch table of the families given.
func New(o Options) *Tools {
	t := &Tools{handlers: map[string]Handler{}}
	if o.Memory != nil {
		for _, c := range MemoryCanonicals {
			t.handlers[c] = o.Memory.Run
		}
	}
	if o.Models != nil {
		t.handlers[CanonicalModelsList] = o.Models.Run
	}
	if o.Discovery != nil {
		t.handlers[CanonicalToolSearch] = o.Discovery.Search
		t.handlers[CanonicalToolCall] = o.Discovery.Call
	}
	if o.Runners != nil {
		t.handlers[CanonicalRunnersList] = o.Runners.Run
	}
	if o.Skill != nil {
		t.handlers[CanonicalSkill] = o.Skill.Run
	}
	if o.Graph != nil {
		t.handlers[CanonicalDelegateTask] = o.Graph.Delegate
		t.handlers[CanonicalWait] = o.Graph.Wait
	}
	if o.Human != nil {
		t.handlers[CanonicalAsk] = o.Human.Ask
	}
	if o.History != nil {
		t.handlers[CanonicalSessionRead] = o.History.Read
		t.handlers[CanonicalSessionSearch] = o.History.Search
	}
	if o.Conversation != nil {
		t.handlers[CanonicalSpawn] = o.Conversation.Spawn
		t.handlers[CanonicalSend] = o.Conversation.Send
		t.handlers[CanonicalStatus] = o.Conversation.Status
		t.handlers[CanonicalCancel] = o.Conversation.Cancel
	}
	return t
}

// WaitTimedOut is WaitTimeoutDetail: the engine settles an expired wait.
func (t *Tools) WaitTimedOut(task string, timeoutMS int64) string {
	return WaitTimeoutDetail(task, timeoutMS)
}

// WaitCanceled is WaitCanceledDetail: the engine settles a canceled wait.
func (t *Tools) WaitCanceled(task string) string { return WaitCanceledDetail(task) }

// WaitTargetGone is the error result of a wait whose target was collected while observed.
func (t *Tools) WaitTargetGone(task string) *runs.KernelResult { return waitTargetGone(task) }

// DelegateModelLine is a waited delegate_task's "[model: …]" line, read from its stored input.
func (t *Tools) DelegateModelLine(input []byte, ranOn string, started bool) (string, error) {
	return delegateModelLine(input, ranOn, started)
}

// SpawnStillWorking is SpawnStillWorkingText: the engine settles a waited spawn whose waiting
// ended before the reply.
func (t *Tools) SpawnStillWorking(conversationPublicID, label, answeredBy string) string {
	return SpawnStillWorkingText(conversationPublicID, label, answeredBy)
}

// Canonicals lists the canonical names the table dispatches.
func (t *Tools) Canonicals() []string {
	out := make([]string, 0, len(t.handlers))
	for c := range t.handlers {
		out = append(out, c)
	}
	return out
}

// KeyToolNotServed is the task failure of a kernel tool without a handler in this build.
const KeyToolNotServed = refusal.CodeToolNotServed

// Run dispatches a call by canonical name. A tool without a handler fails its task
// tool_not_served: the registry lists twenty live tools, and until each has its executor the
// model must read that the call could not run rather than a made-up result.
func (t *Tools) Run(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	h, ok := t.handlers[call.Canonical]
	if !ok {
		return &runs.KernelOutcome{Failure: &runs.TaskError{Key: KeyToolNotServed,
			Detail: fmt.Sprintf("the kernel has no executor for %s (%s) in this version", call.ToolName, call.Canonical)}}, nil
	}
	return h(ctx, call)
}

// Services are what the whole kernel tool set runs over.
type Services struct {
	// Memory is kernel memory's store, the provider of the memory family and the home of
	// kernel skills; Resolver resolves a run's frozen memory bindings.
	Memory   *kmemory.Store
	Resolver *kmemory.Resolver
	// Models is the models catalog; Compiler compiles and narrows declarations.
	Models   *model.Catalog
	Compiler *declare.Compiler
	// Now is the clock of memory's written_at stamps; nil means time.Now.
	Now func() time.Time
}

// Full builds the dispatch table of every family: the table the server runs, with a handler for
// each of the registry's twenty canonical names (docs/agent-tools.md#the-twenty-kernel-tools holds
// it to that, both ways).
func Full(s Services) *Tools {
	scopes := MemoryScopes{Resolver: s.Resolver}
	return New(Options{
		Memory:       &Memory{Provider: s.Memory, Scopes: scopes, Now: s.Now},
		Models:       &Models{Catalog: s.Models},
		Discovery:    &Discovery{Compiler: s.Compiler},
		Runners:      &Runners{},
		Skill:        &Skill{Store: s.Memory, Scopes: scopes},
		Graph:        &Graph{Compiler: s.Compiler, Models: s.Models},
		Human:        &Human{},
		History:      &History{},
		Conversation: &Conversation{},
	})
}
