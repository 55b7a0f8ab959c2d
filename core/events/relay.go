package events

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Relay carries events between the instances sharing a store (Crosses: member events and kernel
// work): those one commit made true (Bus.PublishAll) are handed to send as one payload (the run
// engine sends it on the store's notification channel, PostgreSQL NOTIFY, after the commit), and
// every event of a payload another instance sent is published here as a remote event. It is the store subscription's handler
// (Notified, Live, Lost): while notifications may be missed, every subscription is told so, and
// a member stream then tells its client to re-read (docs/api.md#events).
//
// Model deltas are coalesced per run before they cross: a round's text travels in pieces of up
// to DeltaBytes, at most DeltaDelay after its first unsent piece, and every other event of the
// run waits until the run's pending text has gone, so that the other instances see a run's
// events in the order they happened.
type Relay struct {
	bus  *Bus
	send func(payload string)
	// Failed hears a payload that could not be read or written; nil ignores it.
	Failed func(error)

	// mu orders what goes out: pending deltas and the events that must follow them.
	mu      sync.Mutex
	pending map[string]*pendingDelta
}

// Bounds of the coalescing of model deltas between instances (docs/api.md#events).
const (
	// DeltaDelay bounds how long a piece of text waits for the next before it crosses: short
	// enough that a follower on another instance reads along, long enough that a provider's
	// token-sized pieces cross as a few notifications a second.
	DeltaDelay = 50 * time.Millisecond
	// DeltaBytes bounds the text one relayed delta carries, well under MaxPayload with its
	// JSON's escaping.
	DeltaBytes = 2 << 10
)

// pendingDelta is one run's text not yet relayed.
type pendingDelta struct {
	first ModelDelta
	text  strings.Builder
	timer *time.Timer
}

// NewRelay relays bus's member events through send, and returns the handler of the other
// instances' payloads.
func NewRelay(bus *Bus, send func(payload string)) *Relay {
	r := &Relay{bus: bus, send: send, pending: map[string]*pendingDelta{}}
	bus.Forward(r.forward)
	return r
}

// forward relays the member events one commit made true (or one streamed delta), in one
// payload where they fit: a delta's text joins its run's pending text; any other event sends
// its run's pending text first.
func (r *Relay) forward(evs []Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, ev := range evs {
		m, member := ev.(MemberEvent)
		if !member {
			out = append(out, ev)
			continue
		}
		run := m.Where().Run
		d, isDelta := ev.(ModelDelta)
		if p := r.pending[run]; p != nil {
			if isDelta && d.Text != "" && d.TaskKey == p.first.TaskKey && d.Attempt == p.first.Attempt && p.text.Len()+len(d.Text) <= DeltaBytes {
				p.text.WriteString(d.Text)
				continue
			}
			out = append(out, r.takeLocked(run))
		}
		if isDelta && d.Text != "" {
			p := &pendingDelta{first: d}
			p.text.WriteString(d.Text)
			p.timer = time.AfterFunc(DeltaDelay, func() { r.flush(run, p) })
			r.pending[run] = p
			continue
		}
		out = append(out, ev)
	}
	r.sendLocked(out)
}

// flush sends p, a run's pending text, unless it went meanwhile.
func (r *Relay) flush(run string, p *pendingDelta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[run] == p {
		r.sendLocked([]Event{r.takeLocked(run)})
	}
}

// takeLocked answers a run's pending text as one delta, and forgets it.
func (r *Relay) takeLocked(run string) Event {
	p := r.pending[run]
	delete(r.pending, run)
	p.timer.Stop()
	d := p.first
	d.Text = p.text.String()
	return d
}

// sendLocked sends evs in as few payloads as MaxPayload allows, in order.
func (r *Relay) sendLocked(evs []Event) {
	for len(evs) > 0 {
		p, n, err := encode(r.bus.epoch, evs)
		if err != nil {
			r.fail(err)
		}
		if p != "" {
			r.send(p)
		}
		evs = evs[n:]
	}
}

// Notified publishes another instance's events; those this bus sent itself are dropped, read no
// further than their origin.
func (r *Relay) Notified(payload string) {
	origin, body, ok := strings.Cut(payload, " ")
	if !ok {
		r.fail(fmt.Errorf("events: a relayed payload without its origin"))
		return
	}
	if origin == r.bus.epoch {
		return
	}
	evs, err := decode(body)
	if err != nil {
		r.fail(err)
		return
	}
	for _, ev := range evs {
		r.bus.PublishRemote(ev)
	}
}

// Live: from now on every event arrives; what was sent before may have been missed, so every
// subscription is told so once more.
func (r *Relay) Live() { r.bus.LoseAll() }

// RelayChannel is the base name of the notification channel member events cross instances
// on; the store scopes it.
const RelayChannel = "nexus_events"

// Lost tells every subscription that events may have been missed.
func (r *Relay) Lost() { r.bus.LoseAll() }

func (r *Relay) fail(err error) {
	if r.Failed != nil {
		r.Failed(err)
	}
}

// MaxPayload bounds one payload: PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more, and
// a commit's member events are a few hundred bytes each, so most commits travel in one.
const MaxPayload = 7900

// wire is one relayed event: its kind and its JSON form. A payload is its sender's epoch, a
// space, and a JSON array of them.
type wire struct {
	Kind  Kind            `json:"k"`
	Event json.RawMessage `json:"e"`
}

// encode answers the payload of the first n events of evs that fit in MaxPayload (at least one;
// an event too large alone is dropped with an error, and counted in n).
func encode(origin string, evs []Event) (string, int, error) {
	var b strings.Builder
	b.WriteString(origin)
	b.WriteString(" [")
	n := 0
	for _, ev := range evs {
		e, err := json.Marshal(ev)
		var w []byte
		if err == nil {
			w, err = json.Marshal(wire{Kind: ev.Kind(), Event: e})
		}
		if err != nil {
			if n > 0 {
				break // sent with what precedes it; it fails on its own next
			}
			return "", 1, fmt.Errorf("events: encode %s: %w", ev.Kind(), err)
		}
		if b.Len()+len(w)+2 > MaxPayload {
			if n == 0 {
				return "", 1, fmt.Errorf("events: %s of %d bytes exceeds the relay's %d", ev.Kind(), len(w), MaxPayload)
			}
			break
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(w)
		n++
	}
	b.WriteByte(']')
	return b.String(), n, nil
}

func decode(body string) ([]Event, error) {
	var ws []wire
	if err := json.Unmarshal([]byte(body), &ws); err != nil {
		return nil, fmt.Errorf("events: a relayed payload is not a list of events: %w", err)
	}
	evs := make([]Event, 0, len(ws))
	for _, w := range ws {
		ev, err := decodeKind(w.Kind, w.Event)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func decodeKind(k Kind, b json.RawMessage) (Event, error) {
	var ev Event
	var err error
	switch k {
	case KindRunStatus:
		ev, err = into[RunStatus](b)
	case KindTaskParked:
		ev, err = into[TaskParked](b)
	case KindTaskClaimed:
		ev, err = into[TaskClaimed](b)
	case KindTaskSettled:
		ev, err = into[TaskSettled](b)
	case KindRoundSealed:
		ev, err = into[RoundSealed](b)
	case KindApprovalWaiting:
		ev, err = into[ApprovalWaiting](b)
	case KindApprovalDecided:
		ev, err = into[ApprovalDecided](b)
	case KindAskWaiting:
		ev, err = into[AskWaiting](b)
	case KindAskAnswered:
		ev, err = into[AskAnswered](b)
	case KindTurnStatus:
		ev, err = into[TurnStatus](b)
	case KindModelDelta:
		ev, err = into[ModelDelta](b)
	case KindPluginState:
		ev, err = into[PluginState](b)
	case KindKernelWork:
		ev, err = into[KernelWork](b)
	default:
		return nil, fmt.Errorf("events: a relayed event of unknown kind %q", k)
	}
	if err != nil {
		return nil, fmt.Errorf("events: decode %s: %w", k, err)
	}
	return ev, nil
}

func into[T Event](b json.RawMessage) (Event, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}
