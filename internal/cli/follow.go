package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/sdk/client"
)

// followDrain bounds how long a follower goes on reading once the watch settled, for the events
// the stream had not yet delivered: they were committed before the read that settled the watch.
const followDrain = 500 * time.Millisecond

// follower prints one run's events as they happen (--follow): the text a model streams, a line
// as each tool call begins, and one as each tool row settles. It reads a member stream opened
// before the run's work began, so that nothing of it is missed.
type follower struct {
	e      *env
	s      *client.MemberEventStream
	cancel context.CancelFunc
	ended  chan struct{} // closed when the run's settling event was printed
	done   chan struct{} // closed when the reading goroutine returned

	mu sync.Mutex
	// texts are the round keys whose text was printed.
	texts map[string]bool
	// midLine says the last text printed did not end a line.
	midLine bool
}

// openFollow opens the stream a follower reads, narrowed by o, before the caller starts the work
// it follows.
func (e *env) openFollow(ctx context.Context, c *client.Client, ws string, o client.MemberEventOptions) (*follower, error) {
	ctx, cancel := context.WithCancel(ctx)
	s, err := c.MemberEvents(ctx, ws, o)
	if err != nil {
		cancel()
		return nil, apiError(err)
	}
	return &follower{e: e, s: s, cancel: cancel, ended: make(chan struct{}), done: make(chan struct{}), texts: map[string]bool{}}, nil
}

// start prints run's events from the stream until stop.
func (fl *follower) start(run string) {
	go func() {
		defer close(fl.done)
		ended := false
		for {
			ev, err := fl.s.Next()
			if err != nil {
				return
			}
			if ev.RunPublicID != run {
				continue
			}
			fl.print(ev)
			if !ended && settlesWatch(ev) {
				ended = true
				close(fl.ended)
			}
		}
	}()
}

// settlesWatch reports an event after which a watch of its run is over.
func settlesWatch(ev *client.MemberEvent) bool {
	switch ev.Type {
	case client.MemberRunStatus:
		return ev.Status == runCompleted || ev.Status == runCanceled || ev.Status == runNeedsAttention
	case client.MemberTurnStatus:
		return ev.Status == turnCompleted || ev.Status == turnFailed || ev.Status == turnCanceled
	case client.MemberApprovalWaiting, client.MemberAskWaiting:
		return true
	}
	return false
}

func (fl *follower) print(ev *client.MemberEvent) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	out := fl.e.stdout
	line := func(format string, args ...any) {
		if fl.midLine {
			fmt.Fprintln(out)
			fl.midLine = false
		}
		fmt.Fprintf(out, format+"\n", args...)
	}
	switch ev.Type {
	case client.MemberModelDelta:
		if ev.ToolCall != "" {
			line("[call %s]", ev.ToolCall)
			return
		}
		if ev.Text != "" {
			fmt.Fprint(out, ev.Text)
			fl.texts[ev.TaskKey] = true
			fl.midLine = ev.Text[len(ev.Text)-1] != '\n'
		}
	case client.MemberTaskSettled:
		if ev.ToolName == "" {
			return
		}
		if ev.ErrorKey != "" {
			line("[%s %s: %s]", ev.ToolName, ev.Status, ev.ErrorKey)
		} else {
			line("[%s %s]", ev.ToolName, ev.Status)
		}
	}
}

// stop ends the follower once the run's settling event was printed, or after followDrain, and
// ends the line its text left open. It answers whether it printed text of round key.
func (fl *follower) stop(key string) bool {
	select {
	case <-fl.ended:
	case <-time.After(followDrain):
	}
	fl.cancel()
	fl.s.Close()
	<-fl.done
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.midLine {
		fmt.Fprintln(fl.e.stdout)
		fl.midLine = false
	}
	return fl.texts[key]
}
