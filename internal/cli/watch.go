package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/sdk/client"
)

// Watching a run is a waiting read (docs/api.md#waiting-for-a-run): the server answers when the
// run leaves running or needs a person, or after watchWait. Between reads that answer a run the
// watch does not settle on (canceling, a wait that passed), the watch polls: the first reads come
// quickly, later ones slow down to a second apart.
const (
	// watchWait is each read's wait in seconds, the longest the server grants.
	watchWait = int(conversations.MaxRunWait / time.Second)
	// watchFirstPoll is the wait before the second read of a watched run.
	watchFirstPoll = 50 * time.Millisecond
	// watchMaxPoll is the longest wait between two reads.
	watchMaxPoll = time.Second
)

// Run statuses and attention reasons the watch decides on (docs/api.md, "Runs").
const (
	runCompleted      = runs.RunCompleted
	runCanceled       = runs.RunCanceled
	runNeedsAttention = runs.RunNeedsAttention
	reasonHuman       = runs.ReasonAwaitingHuman
	reasonApproval    = runs.ReasonApprovalRequired
)

// errWatchTimeout is the end of a watch whose --timeout passed.
var errWatchTimeout = errors.New("the run did not end within --timeout")

// The exit codes of the commands that wait for a run (run watch, run create --watch, run append
// --watch, conversation send), after 0 (completed), 1 (any other error) and 2 (usage), so that a
// script tells how a run stands without reading its output (README, "The command line").
const (
	// exitWaiting: the run waits for a person (an ask or a held approval); standard output
	// says what, with the commands that answer.
	exitWaiting = 3
	// exitNeedsAttention: the run cannot finish by itself; it waits for an append or a stop.
	exitNeedsAttention = 4
	// exitCanceled: the run was canceled.
	exitCanceled = 5
	// exitTimeout: --timeout passed first; the run goes on.
	exitTimeout = 6
)

// timedOut is the end of a watch whose --timeout passed.
func timedOut(run string, timeout time.Duration) error {
	return &exitError{code: exitTimeout, err: fmt.Errorf("run %s did not settle within --timeout %s; it goes on (nexus run watch %s)", run, timeout, run)}
}

// runOutcome is how a settled run ends the command: nil when it completed, else the exit code
// with what to say on standard error (nothing for a run waiting for a person, which standard
// output describes).
func runOutcome(r *client.Run) error {
	switch r.Status {
	case runCompleted:
		return nil
	case runCanceled:
		return &exitError{code: exitCanceled, err: fmt.Errorf("run %s was canceled", r.PublicID)}
	case runNeedsAttention:
		return &exitError{code: exitNeedsAttention, err: fmt.Errorf("run %s needs attention: %s; "+
			"read a task with nexus task show %s KEY, then append a repair (nexus run append %s --prompt TEXT, --tool NAME or --file STEPS) "+
			"or stop it (nexus run stop %s)", r.PublicID, attentionText(r), r.PublicID, r.PublicID, r.PublicID)}
	}
	return &exitError{code: exitWaiting}
}

// waitingForPerson reports whether a live run stands on an ask or a held approval.
func waitingForPerson(r *client.Run) bool {
	for _, a := range r.Attention {
		if a.Reason == reasonHuman || a.Reason == reasonApproval {
			return true
		}
	}
	return false
}

// settled reports whether a watch of r is over: the run ended, cannot go on by itself, or waits
// for a person.
func settled(r *client.Run) bool {
	switch r.Status {
	case runCompleted, runCanceled, runNeedsAttention:
		return true
	}
	return waitingForPerson(r)
}

// poll calls read until done says the value is final, the context ends, or timeout (0: none)
// passes.
func poll[T any](ctx context.Context, timeout time.Duration, read func(context.Context) (T, error), done func(T) bool) (T, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	wait := watchFirstPoll
	for {
		v, err := read(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && timeout > 0 {
				return v, errWatchTimeout
			}
			return v, err
		}
		if done(v) {
			return v, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0 {
				return v, errWatchTimeout
			}
			return v, ctx.Err()
		case <-t.C:
		}
		if wait = wait * 2; wait > watchMaxPoll {
			wait = watchMaxPoll
		}
	}
}

// watchRun reads a run, waiting, until settled says it is over.
func watchRun(ctx context.Context, c *client.Client, ws, run string, timeout time.Duration) (*client.RunResponse, error) {
	res, err := poll(ctx, timeout, func(ctx context.Context) (*client.RunResponse, error) {
		return c.WaitRun(ctx, ws, run, watchWait)
	}, func(r *client.RunResponse) bool { return settled(&r.Run) })
	if err != nil && !errors.Is(err, errWatchTimeout) {
		err = apiError(err)
	}
	return res, err
}

// watchAndReport watches a run and reports how it stands: the answer of a completed run, what a
// person must do for a waiting one; the exit code tells which (runOutcome). --json prints the
// run's body whatever its outcome, with the same exit code.
// With fl (--follow), the run's events are printed as they happen, and a completed run's answer
// is not printed again when its text streamed.
func (e *env) watchAndReport(ctx context.Context, c *client.Client, f *adminFlags, ws, run string, timeout time.Duration, fl *follower) error {
	if fl != nil {
		fl.start(run)
	}
	res, err := watchRun(ctx, c, ws, run, timeout)
	streamed := false
	if fl != nil {
		key := ""
		if err == nil {
			key = res.Run.DeliverableTaskKey
		}
		streamed = fl.stop(key)
	}
	if errors.Is(err, errWatchTimeout) {
		return timedOut(run, timeout)
	}
	if err != nil {
		return err
	}
	if f.json {
		if err := e.raw(res.Raw); err != nil {
			return err
		}
		return runOutcome(&res.Run)
	}
	if streamed && res.Run.Status == runCompleted {
		return nil
	}
	return e.report(ctx, c, ws, &res.Run)
}

// report prints a settled run's outcome and ends the command with its exit code.
func (e *env) report(ctx context.Context, c *client.Client, ws string, r *client.Run) error {
	switch r.Status {
	case runCompleted:
		answer := ""
		if r.Answer != nil {
			answer = *r.Answer
		}
		_, err := fmt.Fprintln(e.stdout, strings.TrimRight(answer, "\n"))
		return err
	case runCanceled, runNeedsAttention:
		return runOutcome(r)
	}
	if err := e.printWaiting(ctx, c, ws, r); err != nil {
		return err
	}
	return runOutcome(r)
}

// attentionText names the reasons of a run that cannot go on, with the errors of the tasks
// they name.
func attentionText(r *client.Run) string {
	errs := map[string]string{}
	for _, t := range r.Tasks {
		if t.Error != nil {
			d := t.Error.Key
			if t.Error.Detail != "" {
				d += ": " + oneLine(t.Error.Detail)
			}
			errs[t.Key] = d
		}
	}
	var parts []string
	for _, a := range r.Attention {
		keys := make([]string, len(a.TaskKeys))
		for i, k := range a.TaskKeys {
			keys[i] = k
			if d, ok := errs[k]; ok {
				keys[i] += " (" + d + ")"
			}
		}
		parts = append(parts, a.Reason+": "+strings.Join(keys, ", "))
	}
	if len(parts) == 0 {
		return "see nexus run show " + r.PublicID
	}
	return strings.Join(parts, "; ")
}

// printWaiting prints the asks and approvals a live run waits on, each with the command that
// answers it. The run's trace rows are brief; each waiting task is read whole for its question or
// its call.
func (e *env) printWaiting(ctx context.Context, c *client.Client, ws string, r *client.Run) error {
	fmt.Fprintf(e.stdout, "run %s waits for a person:\n", r.PublicID)
	for _, a := range r.Attention {
		for _, k := range a.TaskKeys {
			t := &client.Task{Key: k}
			if res, err := c.Task(ctx, ws, r.PublicID, k); err == nil {
				t = &res.Task
			} else if !isNotFound(err) {
				return apiError(err)
			}
			switch a.Reason {
			case reasonHuman:
				q := ""
				if t.Prompt != nil {
					q = *t.Prompt
				}
				fmt.Fprintf(e.stdout, "  ask %s: %s\n    answer: nexus ask answer %s %s TEXT\n", k, oneLine(q), r.PublicID, k)
			case reasonApproval:
				what := strings.TrimSpace(t.ToolName + " " + compactJSON(t.ToolInput))
				fmt.Fprintf(e.stdout, "  approval %s: %s\n    decide: nexus approve %s %s  (or nexus deny)\n", k, what, r.PublicID, k)
			}
		}
	}
	return nil
}

// isNotFound reports a 404 answer.
func isNotFound(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Status == 404
}

// compactJSON renders a JSON value on one line; "" for none.
func compactJSON(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}
