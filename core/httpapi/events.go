package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/nexuskernel/nexus/core/executors"
)

// The executor's event stream (docs/api.md#the-executor-plane): Server-Sent Events written from a
// push hub stream. It needs Deps.Push; without it the route is not served.
func (a *API) eventRoutes() {
	if a.deps.Push == nil {
		return
	}
	a.handle("GET /agent_api/v1/executor/events", routeOpts{}, a.executorEvents)
}

// streamWriteTimeout bounds one frame's write: a client that cannot take a ping within two
// ping intervals is gone, and its stream must not hold a goroutine and a slot forever.
const streamWriteTimeout = 2 * executors.PingInterval

// workAvailableJSON and workCanceledJSON are the data lines, keys in the order of
// docs/api.md#the-executor-plane.
type workAvailableJSON struct {
	Type        string `json:"type"`
	Kind        string `json:"kind"`
	RunPublicID string `json:"run_public_id"`
	TaskKey     string `json:"task_key"`
	ToolName    string `json:"tool_name"`
}

type workCanceledJSON struct {
	Type        string `json:"type"`
	RunPublicID string `json:"run_public_id"`
	TaskKey     string `json:"task_key"`
	Reason      string `json:"reason"`
}

// eventData is an event's one-line JSON, or nil for an event type this version does not send.
func eventData(ev executors.Event) []byte {
	switch ev.Type {
	case executors.EventWorkAvailable:
		return marshal(workAvailableJSON{ev.Type, ev.Kind, ev.RunPublicID, ev.TaskKey, ev.ToolName})
	case executors.EventWorkCanceled:
		return marshal(workCanceledJSON{ev.Type, ev.RunPublicID, ev.TaskKey, ev.Reason})
	}
	return nil
}

// executorEvents serves one stream: the opening frames, one frame per event with a per-stream
// id counter, a ": ping" comment every ping interval, until the client leaves, the executor is
// revoked, the stream falls behind, or the server shuts down. Last-Event-ID is accepted and
// ignored: nothing is replayed (docs/api.md#the-executor-plane).
func (a *API) executorEvents(w http.ResponseWriter, r *http.Request, c *Call) error {
	st, err := a.deps.Push.Open(r.Context(), c.Executor.ID, c.Executor.PublicID)
	if err != nil {
		if errors.Is(err, executors.ErrTooManyStreams) {
			w.Header().Set("Retry-After", executors.RetryAfter())
		}
		return err
	}
	defer st.Close()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	rc := http.NewResponseController(w)
	send := func(frame []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(frame); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	var open bytes.Buffer
	open.WriteString("retry: " + strconv.FormatInt(executors.ReconnectDelay.Milliseconds(), 10) + "\n\n")
	open.WriteString(": connected " + c.Executor.PublicID + "\n\n")
	if !send(open.Bytes()) {
		return nil
	}
	ping := time.NewTicker(a.deps.Push.PingInterval())
	defer ping.Stop()
	var id int64
	for {
		select {
		case ev := <-st.Events():
			data := eventData(ev)
			if data == nil {
				continue
			}
			id++
			var f bytes.Buffer
			f.WriteString("id: " + strconv.FormatInt(id, 10) + "\n")
			f.WriteString("event: " + ev.Type + "\n")
			f.WriteString("data: ")
			f.Write(data)
			f.WriteString("\n\n")
			if !send(f.Bytes()) {
				return nil
			}
		case <-ping.C:
			if !send([]byte(": ping\n\n")) {
				return nil
			}
		case <-st.Done():
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}
