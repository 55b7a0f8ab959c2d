package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// The member event kinds (docs/api.md#events). Clients skip kinds they do not know.
const (
	MemberRunStatus       = "run.status"
	MemberTaskParked      = "task.parked"
	MemberTaskClaimed     = "task.claimed"
	MemberTaskSettled     = "task.settled"
	MemberRoundSealed     = "round.sealed"
	MemberApprovalWaiting = "approval.waiting"
	MemberApprovalDecided = "approval.decided"
	MemberAskWaiting      = "ask.waiting"
	MemberAskAnswered     = "ask.answered"
	MemberTurnStatus      = "turn.status"
	// MemberModelDelta is a piece of a model round's answer as it streams: Text, or ToolCall
	// naming a call as it begins. Deltas have no id and are never replayed.
	MemberModelDelta = "model.delta"
	// MemberPluginState is a plugin's state change (Name, State, Instance), sent to the streams
	// of workspace owners; it names no workspace.
	MemberPluginState = "plugin.state"
	// MemberResync says that events may have been missed: re-read what you follow (Reason says
	// why), then go on reading the stream.
	MemberResync = "resync"
)

// MemberEvent is one event of a workspace's member stream. Type names it; the other fields
// are those its kind carries (docs/api.md#events), zero when it carries none.
type MemberEvent struct {
	// ID is the event's id; resuming after it (MemberEventOptions.LastEventID) continues the
	// stream on the same server.
	ID   string `json:"-"`
	Type string `json:"-"`
	// Data is the event's JSON as sent.
	Data json.RawMessage `json:"-"`

	WorkspacePublicID    string `json:"workspace_public_id"`
	RunPublicID          string `json:"run_public_id"`
	ConversationPublicID string `json:"conversation_public_id"`
	Status               string `json:"status"`
	TaskKey              string `json:"task_key"`
	Kind                 string `json:"kind"`
	ToolName             string `json:"tool_name"`
	ErrorKey             string `json:"error_key"`
	ExecutorPublicID     string `json:"executor_public_id"`
	Generation           int64  `json:"generation"`
	RoundNumber          int64  `json:"round_number"`
	Finish               string `json:"finish"`
	ToolCalls            int    `json:"tool_calls"`
	Decision             string `json:"decision"`
	By                   string `json:"by"`
	TurnPublicID         string `json:"turn_public_id"`
	Position             int64  `json:"position"`
	// Text, ToolCall and Attempt are a model.delta's: a retried provider call streams its
	// answer again from the start under the next attempt.
	Text     string `json:"text"`
	ToolCall string `json:"tool_call"`
	Attempt  int    `json:"attempt"`
	// Name, State and Instance are a plugin.state's: the plugin, its new state and the instance
	// whose copy of it changed.
	Name     string `json:"name"`
	State    string `json:"state"`
	Instance string `json:"instance"`
	// Reason is a resync's.
	Reason string `json:"reason"`
}

// MemberEventOptions narrow a member stream and say where it resumes.
type MemberEventOptions struct {
	// RunPublicID and ConversationPublicID keep only that run's or conversation's events.
	RunPublicID, ConversationPublicID string
	// LastEventID resumes after that event; empty starts from now.
	LastEventID string
}

// MemberEventStream is an open GET /agent_api/v1/workspaces/{ws}/events. Read it with Next,
// which reconnects after a dropped connection, resuming after the last event it returned;
// Close it when done.
type MemberEventStream struct {
	c    *Client
	ctx  context.Context
	path string
	opts MemberEventOptions

	mu   sync.Mutex
	resp *http.Response
	br   *bufio.Reader
	// Retry is the reconnection delay the server advised (zero until its retry field is read).
	Retry  time.Duration
	closed bool
}

// MemberEvents opens workspace ws's member event stream. A stream over the server's bound per
// member is *Error 429 rate_limited with RetryAfter.
func (c *Client) MemberEvents(ctx context.Context, ws string, o MemberEventOptions) (*MemberEventStream, error) {
	q := url.Values{}
	if o.RunPublicID != "" {
		q.Set("run_public_id", o.RunPublicID)
	}
	if o.ConversationPublicID != "" {
		q.Set("conversation_public_id", o.ConversationPublicID)
	}
	path := "/agent_api/v1/workspaces/" + url.PathEscape(ws) + "/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	s := &MemberEventStream{c: c, ctx: ctx, path: path, opts: o}
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *MemberEventStream) connect() error {
	hdr := http.Header{"Accept": {"text/event-stream"}}
	if s.opts.LastEventID != "" {
		hdr.Set("Last-Event-ID", s.opts.LastEventID)
	}
	resp, err := s.c.open(s.ctx, http.MethodGet, s.path, nil, hdr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		resp.Body.Close()
		return errors.New("client: the event stream is closed")
	}
	s.resp, s.br = resp, bufio.NewReaderSize(resp.Body, maxEventLine)
	return nil
}

// LastEventID is the id of the last event Next returned, which a new stream resumes after.
func (s *MemberEventStream) LastEventID() string { return s.opts.LastEventID }

// Close ends the stream.
func (s *MemberEventStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.resp.Body.Close()
}

// Next blocks until the next event and returns it. When the connection drops it reconnects
// after the server's retry delay, resuming after the last event; the server answers a resume
// it cannot serve with a resync event. It returns the context's error once ctx is done, and the
// error of a reconnection the server refuses.
func (s *MemberEventStream) Next() (*MemberEvent, error) {
	for {
		f, err := readFrame(s.br, &s.Retry)
		if err == nil {
			ev := &MemberEvent{ID: f.id, Type: f.event, Data: f.data}
			_ = json.Unmarshal(ev.Data, ev)
			if ev.ID != "" {
				s.opts.LastEventID = ev.ID
			}
			return ev, nil
		}
		if cerr := s.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, io.EOF
		}
		s.resp.Body.Close()
		select {
		case <-time.After(s.Retry):
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
		if err := s.connect(); err != nil {
			return nil, err
		}
	}
}
