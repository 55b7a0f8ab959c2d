package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// Event words of the executor's stream. Clients skip event types and row kinds they do not
// know, and treat an unknown work_canceled reason as a cancel.
const (
	EventWorkAvailable = announce.EventWorkAvailable
	EventWorkCanceled  = announce.EventWorkCanceled
)

// Event is one event of the executor's stream: a hint that work changed. The inbox stays
// authoritative; an event carries nothing executable.
type Event struct {
	// ID is the per-stream counter the server sent.
	ID string `json:"-"`
	// Type is the SSE event name: work_available or work_canceled.
	Type string `json:"-"`
	// Data is the event's JSON as sent.
	Data        json.RawMessage `json:"-"`
	Kind        string          `json:"kind"`
	RunPublicID string          `json:"run_public_id"`
	TaskKey     string          `json:"task_key"`
	ToolName    string          `json:"tool_name"`
	Reason      string          `json:"reason"`
}

// EventStream is an open GET /agent_api/v1/executor/events. Read it with Next; Close it when done.
type EventStream struct {
	resp *http.Response
	br   *bufio.Reader
	// Retry is the reconnection delay the server advised (zero until its retry field is read).
	Retry time.Duration
}

// maxEventLine bounds one line of the stream: the server's lines are short; a longer one means
// the other end is not a Nexus stream.
const maxEventLine = 64 << 10

// Events opens the executor's event stream. A ninth concurrent stream is *Error 429
// rate_limited with RetryAfter. Nothing is replayed on reconnect: read the inbox after every
// (re)connect.
func (c *Client) Events(ctx context.Context) (*EventStream, error) {
	resp, err := c.open(ctx, http.MethodGet, "/agent_api/v1/executor/events", nil, http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return nil, err
	}
	return &EventStream{resp: resp, br: bufio.NewReaderSize(resp.Body, maxEventLine)}, nil
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.resp.Body.Close() }

// Next blocks until the next event and returns it; comments (the connected line, pings) are
// skipped. When the server ends the stream it returns io.EOF.
func (s *EventStream) Next() (*Event, error) {
	f, err := readFrame(s.br, &s.Retry)
	if err != nil {
		return nil, err
	}
	ev := &Event{ID: f.id, Type: f.event, Data: f.data}
	_ = json.Unmarshal(ev.Data, ev)
	return ev, nil
}

// frame is one Server-Sent Events frame.
type frame struct {
	id, event string
	data      json.RawMessage
}

// readFrame reads the next frame that carries data; comments are skipped, and a retry field
// is stored in retry. At the end of the stream it returns io.EOF.
func readFrame(br *bufio.Reader, retry *time.Duration) (frame, error) {
	var f frame
	var data []string
	hasData := false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return frame{}, errors.New("client: an event stream line is too long")
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return frame{}, io.EOF
			}
			return frame{}, err
		}
		text := strings.TrimRight(string(line), "\r\n")
		if text == "" {
			if !hasData {
				f, data = frame{}, nil
				continue
			}
			f.data = json.RawMessage(strings.Join(data, "\n"))
			return f, nil
		}
		if strings.HasPrefix(text, ":") {
			continue
		}
		field, value, _ := strings.Cut(text, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.id = value
		case "event":
			f.event = value
		case "data":
			data = append(data, value)
			hasData = true
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms >= 0 {
				*retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}
