package kernel

import (
	"context"
	"fmt"

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

// Canonicals lists the canonical names the table dispatches.
func (t *Tools) Canonicals() []string {
	out := make([]string, 0, len(t.handlers))
	for c := range t.handlers {
		out = append(out, c)
	}
	return out
}

// KeyToolNotServed is the task failure of a kernel tool without a handler in this build.
const KeyToolNotServed = "tool_not_served"

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
