package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// The members' event stream (docs/api.md#events): Server-Sent Events of a workspace's member
// events (core/events), filterable by run and conversation, resumable within the event feed's
// window on the same instance. It needs Deps.Events; without it the route is not served.

// Bounds of the member event streams (docs/api.md#events).
const (
	// MaxMemberStreams bounds the streams one member holds open on one instance: a console, a
	// CLI following a run and a script or two, while a client that leaks reconnections is
	// stopped before it holds a goroutine and a subscription per attempt.
	MaxMemberStreams = 8
	// MemberStreamKeepAlive spaces the keep-alive comments of an idle stream: well under the
	// minute after which proxies and load balancers commonly cut a silent response.
	MemberStreamKeepAlive = 15 * time.Second
	// MemberStreamRetry is the reconnection delay the stream asks of its client (the retry:
	// field): soon enough that a reconnect usually resumes inside the window.
	MemberStreamRetry = 2 * time.Second
	// memberStreamRetryAfter is the Retry-After of a stream refused for MaxMemberStreams.
	memberStreamRetryAfter = "5"
)

// The reasons of a resync event (docs/api.md#events).
const (
	// ResyncUnknownID: Last-Event-ID was given by another instance, by this one before a
	// restart, or is not an id of this server.
	ResyncUnknownID = "unknown_event_id"
	// ResyncWindow: the events since Last-Event-ID have left the window.
	ResyncWindow = "outside_window"
	// ResyncMissed: events may have been missed while the stream was open (it fell behind, or
	// another instance's events were interrupted).
	ResyncMissed = "events_missed"
)

// errTooManyMemberStreams refuses a stream over MaxMemberStreams.
var errTooManyMemberStreams = refusal.Newf(refusal.TooManyRequests, executors.CodeRateLimited,
	"A member may hold at most %d event streams on one server at once; retry after one closes.", MaxMemberStreams)

// memberStreams counts the open streams of each member on this instance and ends them all at
// shutdown.
type memberStreams struct {
	mu     sync.Mutex
	open   map[string]int
	closed chan struct{}
	once   sync.Once
}

func newMemberStreams() *memberStreams {
	return &memberStreams{open: map[string]int{}, closed: make(chan struct{})}
}

// take counts one more stream of member, or refuses it.
func (m *memberStreams) take(member string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.open[member] >= MaxMemberStreams {
		return errTooManyMemberStreams
	}
	m.open[member]++
	return nil
}

func (m *memberStreams) release(member string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.open[member]--; m.open[member] <= 0 {
		delete(m.open, member)
	}
}

// CloseStreams ends every member event stream, as the server does when it shuts down.
func (a *API) CloseStreams() { a.streams.once.Do(func() { close(a.streams.closed) }) }

func (a *API) memberEventRoutes() {
	if a.deps.Events == nil {
		return
	}
	a.handle("GET /agent_api/v1/workspaces/{ws}/events", routeOpts{}, a.memberEvents)
}

// eventID is a member event's id: the bus's epoch and the event's number on it.
func eventID(epoch string, seq uint64) string { return epoch + "-" + strconv.FormatUint(seq, 10) }

// resumePoint reads Last-Event-ID: the number to resume after and true when it is an id of
// this bus; reason says why not otherwise ("" when there is no id).
func resumePoint(bus *events.Bus, last string) (uint64, bool, string) {
	if last == "" {
		return 0, false, ""
	}
	epoch, n, ok := strings.Cut(last, "-")
	if !ok || epoch != bus.Epoch() {
		return 0, false, ResyncUnknownID
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return 0, false, ResyncUnknownID
	}
	return seq, true, ""
}

// memberEvents serves one stream: the retry field, the events the member may read (its
// workspace's, narrowed by the run and conversation parameters), a keep-alive comment every
// MemberStreamKeepAlive, and one resync event whenever events may have been missed, until the
// client leaves or the server shuts down.
func (a *API) memberEvents(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	// The deployment's events (a plugin's state) go to the workspace's owners, who read the
	// plugins' status (docs/api.md#plugins).
	filter := events.MemberFilter{Workspace: act.WorkspacePublicID, Deployment: act.Kind == store.KindUser && act.Role == store.RoleOwner}
	if filter.Run = q.Get("run_public_id"); filter.Run != "" && !store.IsPublicID(filter.Run) {
		return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "run_public_id must be a run's public id.").With("path", "run_public_id")
	}
	if filter.Conversation = q.Get("conversation_public_id"); filter.Conversation != "" && !store.IsPublicID(filter.Conversation) {
		return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "conversation_public_id must be a conversation's public id.").With("path", "conversation_public_id")
	}
	bus := a.deps.Events
	after, resume, resync := resumePoint(bus, r.Header.Get("Last-Event-ID"))
	if err := a.streams.take(act.PublicID); err != nil {
		w.Header().Set("Retry-After", memberStreamRetryAfter)
		return err
	}
	defer a.streams.release(act.PublicID)
	sub, resumed, at := bus.SubscribeMembers(filter, resume, after)
	defer sub.Close()
	if resume && !resumed {
		resync = ResyncWindow
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	rc := http.NewResponseController(w)
	send := func(frame []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(2 * MemberStreamKeepAlive))
		if _, err := w.Write(frame); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	var open bytes.Buffer
	open.WriteString("retry: " + strconv.FormatInt(MemberStreamRetry.Milliseconds(), 10) + "\n\n")
	if resync != "" {
		open.Write(resyncFrame(bus.Epoch(), at, resync))
	}
	if !send(open.Bytes()) {
		return nil
	}
	ping := time.NewTicker(a.keepAlive())
	defer ping.Stop()
	for {
		select {
		case <-sub.Wake():
			sts, lost := sub.TakeStamped()
			var f bytes.Buffer
			for _, st := range sts {
				f.Write(eventFrame(bus.Epoch(), st))
				at = st.Seq
			}
			if lost {
				f.Write(resyncFrame(bus.Epoch(), at, ResyncMissed))
			}
			if !send(f.Bytes()) {
				return nil
			}
		case <-ping.C:
			if !send([]byte(": keep-alive\n\n")) {
				return nil
			}
		case <-a.streams.closed:
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}

// keepAlive is the keep-alive interval: Deps.EventKeepAlive when set (tests), else
// MemberStreamKeepAlive.
func (a *API) keepAlive() time.Duration {
	if a.deps.EventKeepAlive > 0 {
		return a.deps.EventKeepAlive
	}
	return MemberStreamKeepAlive
}

// eventFrame is one event's frame: its id, its kind and its JSON.
func eventFrame(epoch string, st events.Stamped) []byte {
	data, err := json.Marshal(st.Event)
	if err != nil {
		// Member events are plain structs of strings and numbers.
		panic("httpapi: marshal a member event: " + err.Error())
	}
	var f bytes.Buffer
	if st.Seq > 0 { // a model delta has no number: a reconnect never resumes at one
		f.WriteString("id: " + eventID(epoch, st.Seq) + "\n")
	}
	f.WriteString("event: " + string(st.Event.Kind()) + "\n")
	f.WriteString("data: ")
	f.Write(data)
	f.WriteString("\n\n")
	return f.Bytes()
}

// resyncFrame tells the client to re-read what it follows; its id is the last event number the
// stream has passed, so that a reconnect after it resumes from there.
func resyncFrame(epoch string, at uint64, reason string) []byte {
	data, _ := json.Marshal(map[string]string{"reason": reason})
	var f bytes.Buffer
	f.WriteString("id: " + eventID(epoch, at) + "\n")
	f.WriteString("event: resync\n")
	f.WriteString("data: ")
	f.Write(data)
	f.WriteString("\n\n")
	return f.Bytes()
}
