package kernel

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// AskPark is an ask's clock (docs/agent-tools.md#delegation-and-conversations): a working day for
// a person to answer.
const AskPark = 24 * time.Hour

// Human runs ask: it checks the arguments, addresses the question and builds the await that parks
// it for a member's answer; core/runs writes the await and pairs the call with the <answer>
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
	row, err := askAwait(ctx, call, question{Prompt: prompt, Options: options, Multi: multi})
	if err != nil {
		return nil, err
	}
	return &runs.KernelOutcome{Place: &runs.Placement{Rows: []*store.Task{row}, Await: row.Key, Title: AskTitle}}, nil
}

// question is what an ask call asks.
type question struct {
	Prompt string
	// Options are the choices in display order; nil or empty means an open answer.
	Options []string
	Multi   bool
}

// askAwait is the await an ask call places (docs/agent-tools.md#delegation-and-conversations):
// awaiting a member's answer from birth, hidden, absorbing, parked AskPark, addressed to the
// person the run acts for.
func askAwait(ctx context.Context, call *runs.KernelCall, q question) (*store.Task, error) {
	if call.Tx == nil {
		return nil, errors.New("kernel: an ask is placed inside its settling transaction")
	}
	run, err := store.RunByID(ctx, call.Tx, call.RunID)
	if err != nil {
		return nil, err
	}
	to, err := askAddressee(ctx, call.Tx, run)
	if err != nil {
		return nil, err
	}
	key := runs.ChildKey(call.TaskKey, runs.RoleAsk, 1)
	clock := AskPark.Milliseconds()
	t := &store.Task{TaskTrace: store.TaskTrace{
		Key: key, Kind: runs.KindAwait, Status: runs.StatusAwaitingInput, Origin: runs.OriginKernel,
		OnFailure: runs.OnFailureAbsorb, Lifetime: runs.LifetimeTurn, Wake: runs.WakeAuto, Visibility: runs.VisibilityHidden,
		LineageRoot: key, AwaitKind: new(runs.AwaitAsk), TimeoutMS: &clock,
	},
		Prompt: new(q.Prompt), Multi: new(q.Multi),
		AddressedMember: &runs.AddressedMember{Role: "member", Member: to},
	}
	if len(q.Options) > 0 {
		t.Options = q.Options
	}
	return t, nil
}

// askAddressee is the person a run acts for (docs/agent-tools.md#delegation-and-conversations): the
// user who authored its turn or created it; when that is an agent or the kernel, its answering
// agent's steward.
func askAddressee(ctx context.Context, q store.Querier, run *store.Run) (runs.Member, error) {
	if run.CreatedByKind == store.KindUser {
		return runs.Member{Kind: store.KindUser, PublicID: run.CreatedByPublicID}, nil
	}
	var agent string
	if run.AnsweringAgentPublicID != nil {
		agent = *run.AnsweringAgentPublicID
	}
	if agent == "" && run.CreatedByKind == store.KindAgent {
		agent = run.CreatedByPublicID
	}
	steward, err := store.AgentStewardPublicID(ctx, q, agent)
	if err != nil {
		return runs.Member{}, fmt.Errorf("kernel: the steward of agent %s: %w", agent, err)
	}
	return runs.Member{Kind: store.KindUser, PublicID: steward}, nil
}
