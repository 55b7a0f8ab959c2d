package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/nexuskernel/nexus/core/runs"
)

// CanonicalRunnersList is runners_list's canonical name.
const CanonicalRunnersList = "nexus.runners.list"

// TitleRunnersList is runners_list's title (docs/agent-tools.md#the-twenty-kernel-tools).
const TitleRunnersList = "runner environments"

// Runners runs runners_list (docs/agent-tools.md#the-twenty-kernel-tools): the calling round's
// frozen environment, its selected Runner and the candidates eligible at acceptance in declared
// order, each with its environment as announced then. It reads no profile, announcement or
// connection: a Runner's later changes reach only later acceptance.
type Runners struct{}

// frozenEnvironment is the environment acceptance froze (docs/agent-tools.md#declaring-tools).
type frozenEnvironment struct {
	Default    *string       `json:"default_runner_executor_public_id"`
	Candidates []runnerEntry `json:"runner_candidates"`
}

type runnerEntry struct {
	RunnerExecutorPublicID string          `json:"runner_executor_public_id"`
	DisplayName            string          `json:"display_name"`
	Environment            json.RawMessage `json:"environment"`
}

type runnersAnswer struct {
	Current *string       `json:"current_runner_executor_public_id"`
	Runners []runnerEntry `json:"runners"`
}

// Run answers the list, or invalid_arguments for any key: the tool takes none.
func (Runners) Run(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	a, err := ReadArgs(call.Input, nil, true)
	if err != nil {
		return nil, err
	}
	if e := a.Err(); e != nil {
		return argumentsRefused(call.ToolName, e), nil
	}
	if call.Round == nil {
		return nil, errors.New("kernel: runners_list without a calling round")
	}
	round, err := call.Round(ctx)
	if err != nil {
		return nil, err
	}
	var env frozenEnvironment
	if s := strings.TrimSpace(string(round.Environment)); s != "" && s != "null" {
		if err := json.Unmarshal(round.Environment, &env); err != nil {
			return nil, err
		}
	}
	out := runnersAnswer{Current: env.Default, Runners: []runnerEntry{}}
	for _, r := range env.Candidates {
		if len(r.Environment) == 0 || string(r.Environment) == "null" {
			r.Environment = json.RawMessage(`{}`)
		}
		out.Runners = append(out.Runners, r)
	}
	body, err := compactJSON(out)
	if err != nil {
		return nil, err
	}
	return jsonResult(body, TitleRunnersList), nil
}
