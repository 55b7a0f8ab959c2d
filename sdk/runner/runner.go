package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
)

// Handler runs one claimed call and answers its result. An error commits a failed outcome
// (the tool could not run) whose text is the error's; a result with IsError reports an error the
// model should read. ctx ends when the claim is canceled (work_canceled), its deadline passes
// or the runner stops.
type Handler func(ctx context.Context, call *Call) (*client.Result, error)

// Call is one claimed row.
type Call struct {
	// Row is the row as the claim answered it: tool name, input, key, deadline.
	Row client.WorkRow
	// Input is the row's tool_input (a JSON object, or null).
	Input json.RawMessage
	// Deadline is the claim's current deadline.
	Deadline time.Time
	client   *client.Client
}

// Stage stores a file as this executor's capture; link it in the result with client.LinkBlock.
func (c *Call) Stage(ctx context.Context, filename string, r io.Reader) (*client.Upload, error) {
	up, err := c.client.StageCapture(ctx, filename, r)
	if err != nil {
		return nil, err
	}
	return &up.Upload, nil
}

// Tool is one served tool: what the executor announces and how it runs.
type Tool struct {
	Announce announce.Tool
	Handle   Handler
}

// Runner serves Tools with one executor token.
type Runner struct {
	// Client carries the executor token.
	Client *client.Client
	Tools  []Tool
	// Environment is announced as the executor's environment facts; nil announces {}.
	Environment json.RawMessage
	// Documents are announced for the executor's skill tool.
	Documents []announce.Document
	// Concurrency bounds the calls run at once; 0 means DefaultConcurrency.
	Concurrency int
	// Log receives what the runner absorbs (a lost stream, a refused commit); nil discards.
	Log func(format string, args ...any)
	// Poll is how often the inbox is read besides (re)connects; 0 means DefaultPoll.
	Poll time.Duration
}

// Defaults of a Runner.
const (
	// DefaultConcurrency runs a few calls at once: enough to overlap a slow call with others,
	// few enough for a laptop.
	DefaultConcurrency = 4
	// DefaultPoll reads the inbox now and then even while the stream is quiet: events are
	// hints, and a lost one costs at most this much latency.
	DefaultPoll = 30 * time.Second
	// DefaultReconnect is the wait before reopening a lost stream when the server advised none.
	DefaultReconnect = 3 * time.Second
	// commitAttempts bounds the retries of a commit that failed in transport: the same token
	// is safe to resend until the deadline.
	commitAttempts = 5
	// maxExtension is the most one extend asks for (docs/api.md#the-executor-plane).
	maxExtension = time.Hour
)

type runState struct {
	r        *Runner
	tools    map[string]Handler
	slots    chan struct{}
	mu       sync.Mutex
	inFlight map[string]context.CancelFunc
	wg       sync.WaitGroup
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		r.Log(format, args...)
	}
}

// Announce sends the runner's announcement; Run calls it first.
func (r *Runner) Announce(ctx context.Context) error {
	a := announce.Announcement{Environment: r.Environment, Documents: r.Documents}
	for _, t := range r.Tools {
		a.Tools = append(a.Tools, t.Announce)
	}
	_, err := r.Client.Announce(ctx, a)
	return err
}

// Run announces the tools and serves calls until ctx ends; then it waits for the calls in
// flight to finish (their contexts are canceled) and returns ctx's error. An announcement the
// server refuses ends Run at once with that refusal.
func (r *Runner) Run(ctx context.Context) error {
	if err := r.Announce(ctx); err != nil {
		return err
	}
	n := r.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	st := &runState{r: r, tools: map[string]Handler{}, slots: make(chan struct{}, n), inFlight: map[string]context.CancelFunc{}}
	for _, t := range r.Tools {
		st.tools[t.Announce.Name] = t.Handle
	}
	defer st.wg.Wait()
	for ctx.Err() == nil {
		retry := st.session(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
	st.cancelAll()
	return ctx.Err()
}

// session opens the stream, reads the inbox, and serves events until the stream ends; it
// answers how long to wait before the next session.
func (st *runState) session(ctx context.Context) time.Duration {
	stream, err := st.r.Client.Events(ctx)
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) && ce.RetryAfter > 0 {
			return ce.RetryAfter
		}
		st.r.logf("runner: opening the event stream: %v", err)
		return DefaultReconnect
	}
	defer stream.Close()
	events := make(chan *client.Event)
	done := make(chan error, 1)
	go func() {
		for {
			ev, err := stream.Next()
			if err != nil {
				done <- err
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				done <- ctx.Err()
				return
			}
		}
	}()
	poll := st.r.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	st.drainInbox(ctx)
	for {
		select {
		case <-ctx.Done():
			return 0
		case err := <-done:
			if ctx.Err() == nil {
				st.r.logf("runner: the event stream ended: %v", err)
			}
			if stream.Retry > 0 {
				return stream.Retry
			}
			return DefaultReconnect
		case <-tick.C:
			st.drainInbox(ctx)
		case ev := <-events:
			switch ev.Type {
			case client.EventWorkAvailable:
				if ev.Kind == announce.RowKindToolCall {
					st.start(ctx, ev.RunPublicID, ev.TaskKey, ev.ToolName)
				}
			case client.EventWorkCanceled:
				st.cancel(ev.RunPublicID, ev.TaskKey)
			}
		}
	}
}

// drainInbox reads every page of the inbox and starts each unclaimed row a tool serves.
func (st *runState) drainInbox(ctx context.Context) {
	after := ""
	for {
		page, err := st.r.Client.WorkInbox(ctx, after, 0)
		if err != nil {
			if ctx.Err() == nil {
				st.r.logf("runner: reading the inbox: %v", err)
			}
			return
		}
		for _, row := range page.Tasks {
			if row.Kind == announce.RowKindToolCall && !row.Claimed {
				st.start(ctx, row.RunPublicID, row.TaskKey, row.ToolName)
			}
		}
		if page.Pagination.NextAfter == nil {
			return
		}
		after = *page.Pagination.NextAfter
	}
}

func callKey(run, key string) string { return run + "/" + key }

// start claims the row and runs it on a slot, unless this runner serves no such tool or already
// runs it.
func (st *runState) start(ctx context.Context, run, key, tool string) {
	h := st.tools[tool]
	if h == nil {
		return
	}
	id := callKey(run, key)
	st.mu.Lock()
	if _, busy := st.inFlight[id]; busy {
		st.mu.Unlock()
		return
	}
	callCtx, cancel := context.WithCancel(ctx)
	st.inFlight[id] = cancel
	st.mu.Unlock()
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		defer func() {
			cancel()
			st.mu.Lock()
			delete(st.inFlight, id)
			st.mu.Unlock()
		}()
		select {
		case st.slots <- struct{}{}:
		case <-callCtx.Done():
			return
		}
		defer func() { <-st.slots }()
		st.serve(callCtx, run, key, h)
	}()
}

func (st *runState) cancel(run, key string) {
	st.mu.Lock()
	c := st.inFlight[callKey(run, key)]
	st.mu.Unlock()
	if c != nil {
		c()
	}
}

func (st *runState) cancelAll() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, c := range st.inFlight {
		c()
	}
}

// serve claims one row, runs its handler under the claim's deadline (extended while it runs),
// and commits the answer.
func (st *runState) serve(ctx context.Context, run, key string, h Handler) {
	cl, err := st.r.Client.ClaimWork(ctx, run, key)
	if err != nil {
		var ce *client.Error
		if !errors.As(err, &ce) || (ce.Code != announce.CodeAlreadyClaimed && ce.Code != announce.CodeTaskNotClaimable) {
			st.r.logf("runner: claiming %s/%s: %v", run, key, err)
		}
		return
	}
	token := cl.Claim.ClaimToken
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		st.keepAlive(callCtx, cancel, cl)
	}()
	call := &Call{Row: cl.Task, Input: cl.Task.ToolInput, Deadline: cl.Claim.DeadlineAt, client: st.r.Client}
	res, herr := runHandler(callCtx, h, call)
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return // canceled by work_canceled or shutdown: the kernel already settled the row
	}
	if herr != nil {
		res = &client.Result{Outcome: "failed", Content: herr.Error()}
	}
	if res == nil {
		res = &client.Result{}
	}
	st.commit(run, key, token, res)
}

// runHandler runs h, turning a panic into an error so that one bad call cannot end the runner.
func runHandler(ctx context.Context, h Handler, call *Call) (res *client.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("the tool panicked: %v", p)
		}
	}()
	return h(ctx, call)
}

// keepAlive extends the claim when half of its time is gone, by the row's timeout (at most an
// hour), until ctx ends; a claim that can no longer be extended cancels the call.
func (st *runState) keepAlive(ctx context.Context, cancel context.CancelFunc, cl *client.ClaimResponse) {
	ext := time.Duration(cl.Task.TimeoutMS) * time.Millisecond
	if ext <= 0 || ext > maxExtension {
		ext = maxExtension
	}
	deadline := cl.Claim.DeadlineAt
	for {
		wait := time.Until(deadline) / 2
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		res, err := st.r.Client.ExtendClaim(ctx, cl.Task.RunPublicID, cl.Task.TaskKey, cl.Claim.ClaimToken, ext)
		if err != nil {
			var ce *client.Error
			if errors.As(err, &ce) && ce.Status == 409 {
				cancel() // the claim is gone: settled, canceled or expired
				return
			}
			if ctx.Err() == nil {
				st.r.logf("runner: extending %s/%s: %v", cl.Task.RunPublicID, cl.Task.TaskKey, err)
			}
			continue
		}
		deadline = res.Claim.DeadlineAt
	}
}

// commit answers the row, resending the same token after a transport failure. A refusal is
// final for that payload: a grammar refusal is logged and the row settles at its deadline.
func (st *runState) commit(run, key, token string, res *client.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		_, err := st.r.Client.Commit(ctx, run, key, token, res)
		if err == nil {
			return
		}
		var ce *client.Error
		if errors.As(err, &ce) && ce.Status != 429 && ce.Status < 500 {
			st.r.logf("runner: the commit of %s/%s was refused: %v", run, key, err)
			return
		}
		if attempt == commitAttempts || ctx.Err() != nil {
			st.r.logf("runner: committing %s/%s: %v", run, key, err)
			return
		}
		wait := time.Duration(attempt) * 200 * time.Millisecond
		if ce != nil && ce.RetryAfter > 0 {
			wait = ce.RetryAfter
		}
		time.Sleep(wait)
	}
}

// commitTimeout bounds a commit with its retries: a result is small and the server answers in
// milliseconds; past this the row settles by its deadline anyway.
const commitTimeout = time.Minute
