package kernel

import (
	"context"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// ask's canonical and wire names (docs/agent-tools.md#delegation-and-conversations).
const (
	CanonicalAsk = "nexus.human.ask"
	wireAsk      = "ask"
)

// askParams are ask's parameters in schema order
// (docs/agent-tools.md#delegation-and-conversations).
var askParams = []string{"prompt", "options", "multi"}

// AskTitle is an ask call's title.
const AskTitle = "question for the person"

// Human runs ask: it checks the arguments; core/runs addresses the question, parks it for a
// member's answer and pairs the call with the <answer>
// (docs/agent-tools.md#delegation-and-conversations).
type Human struct{}

// Ask runs ask (docs/agent-tools.md#delegation-and-conversations): one await under the call, which
// the call waits on.
func (Human) Ask(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	a, err := ReadArgs(call.Input, askParams, true)
	if err != nil {
		return nil, err
	}
	prompt, _ := a.String("prompt", true, true)
	options, _ := a.Strings("options", false)
	multi := a.Bool("multi", false, false)
	if e := a.Err(); e != nil {
		return argumentsRefused(wireAsk, e), nil
	}
	row, err := runs.AskAwait(ctx, call, runs.Question{Prompt: prompt, Options: options, Multi: multi})
	if err != nil {
		return nil, err
	}
	return &runs.KernelOutcome{Place: &runs.Placement{Rows: []*store.Task{row}, Await: row.Key, Title: AskTitle}}, nil
}
