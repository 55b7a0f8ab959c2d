package kernel

import (
	"context"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// ask's canonical and wire names (kernel-tools.md §5.3).
const (
	CanonicalAsk = "nexus.human.ask"
	wireAsk      = "ask"
)

// askParams are ask's parameters in schema order (kernel-tools.md §5.3.1).
var askParams = []string{"prompt", "options", "multi"}

// AskTitle is an ask call's title.
const AskTitle = "question for the person"

// Human runs ask: it checks the arguments; core/runs addresses the question, parks it for a
// member's answer and pairs the call with the <answer> (runs.md §3.7.3).
type Human struct{}

// Ask runs ask (kernel-tools.md §5.3.3): one await under the call, which the call waits on.
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
