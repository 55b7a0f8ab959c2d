package conversations

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The typed bodies of the conversation doors (docs/api.md#conversations). An in-process caller
// fills them with Go values; the HTTP door decodes a body into them (UnmarshalJSON), which never
// fails: what a body writes that the fields cannot hold (a number where a string belongs, a key
// the door does not know, an empty id where "" is the Go value's absence) is kept beside them,
// unexported, and the door refuses it at its place in the documented order with the field's own
// word. A value built in Go has nothing kept.

// NewConversation is a conversation to create.
type NewConversation struct {
	// AnsweringAgentPublicID is the agent that answers; "" is the caller itself, when the caller
	// is an agent.
	AnsweringAgentPublicID string
	// Title is at most MaxTitleChars characters without bidirectional controls; nil for none.
	Title *string
	// DefaultRunnerExecutorPublicID is an active Runner of the workspace; "" for none.
	DefaultRunnerExecutorPublicID string

	w bodyWritten
}

// Message is a member's message to post (docs/api.md#conversations).
type Message struct {
	// Text is the message; it may be empty only with Attachments.
	Text string
	// Attachments are up to steps.MaxAttachments upload ids the caller created.
	Attachments []string
	// ToolNames narrows the agent's frozen tools by callable name: nil keeps them all, an empty
	// list offers none.
	ToolNames []string
	// Model is a provider/model reference; "" is the agent profile's default_model, else the
	// deployment's.
	Model string

	w bodyWritten
}

// The fields of the conversation bodies, for what a decoded body wrote.
const (
	bodyAgent = 1 << iota
	bodyTitle
	bodyRunner
	bodyText
	bodyAttachments
	bodyToolNames
	bodyModel
)

// bodyWritten is what a decoded body wrote that its value's fields cannot say by themselves.
type bodyWritten struct {
	notObject bool
	// unknown is the first key, in byte order, the body may not carry.
	unknown string
	// given are the fields written, also as "", bad those written with a value of a type the
	// field cannot hold.
	given, bad int
}

func (w *bodyWritten) has(f int) bool { return w.given&f != 0 || w.bad&f != 0 }

// object reads raw's members by key (a repeated key keeps its last value, as encoding/json
// decodes it) and notes the first key allowed lacks; a null or any other value is no object.
func (w *bodyWritten) object(raw []byte, allowed ...string) map[string][]byte {
	members, err := jsonwire.SplitObject(raw)
	if err != nil {
		w.notObject = true
		return nil
	}
	o := make(map[string][]byte, len(members))
	var unknown []string
	for _, m := range members {
		o[m.Key] = m.Raw
		known := false
		for _, k := range allowed {
			known = known || k == m.Key
		}
		if !known {
			unknown = append(unknown, m.Key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		w.unknown = unknown[0]
	}
	return o
}

func isNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// str reads an optional string: absent and null are "", another value is bad.
func (w *bodyWritten) str(o map[string][]byte, key string, f int) string {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return ""
	}
	s, ok := jsonwire.DecodeString(raw)
	if !ok {
		w.bad |= f
		return ""
	}
	w.given |= f
	return s
}

// list reads an optional list of strings as encoding/json reads one (a null item is ""):
// absent and null are nil, [] an empty list, another value is bad.
func (w *bodyWritten) list(o map[string][]byte, key string, f int) []string {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil
	}
	items, err := jsonwire.SplitArray(raw)
	if err != nil {
		w.bad |= f
		return nil
	}
	out := make([]string, len(items))
	for i, it := range items {
		if isNull(it) {
			continue
		}
		s, ok := jsonwire.DecodeString(it)
		if !ok {
			w.bad |= f
			return nil
		}
		out[i] = s
	}
	return out
}

// UnmarshalJSON decodes a body's "conversation"; it never fails (see above).
func (c *NewConversation) UnmarshalJSON(raw []byte) error {
	*c = NewConversation{}
	o := c.w.object(raw, "answering_agent_public_id", "title", "default_runner_executor_public_id")
	c.AnsweringAgentPublicID = c.w.str(o, "answering_agent_public_id", bodyAgent)
	if v, ok := o["title"]; ok && !isNull(v) {
		if t, ok := jsonwire.DecodeString(v); ok {
			c.Title = &t
		} else {
			c.w.bad |= bodyTitle
		}
	}
	c.DefaultRunnerExecutorPublicID = c.w.str(o, "default_runner_executor_public_id", bodyRunner)
	return nil
}

// UnmarshalJSON decodes a body's "message"; it never fails (see above).
func (m *Message) UnmarshalJSON(raw []byte) error {
	*m = Message{}
	o := m.w.object(raw, "text", "attachments", "tool_names", "model")
	if v, ok := o["text"]; ok && !isNull(v) {
		if s, ok := jsonwire.DecodeString(v); ok {
			m.Text = s
		} else {
			m.w.bad |= bodyText
		}
	}
	m.Attachments = m.w.list(o, "attachments", bodyAttachments)
	m.ToolNames = m.w.list(o, "tool_names", bodyToolNames)
	m.Model = m.w.str(o, "model", bodyModel)
	return nil
}

// check judges the conversation's shape and keys, which the door answers before its transaction.
func (c *NewConversation) check() error {
	switch {
	case c.w.notObject:
		return badField("conversation", "conversation must be an object.")
	case c.w.unknown != "":
		return badField("conversation."+c.w.unknown, "conversation.%s is not a conversation field.", c.w.unknown)
	}
	return nil
}

// agentRef is the answering agent the conversation names, or the refusal of one it cannot name.
func (c *NewConversation) agentRef(a *runs.Actor) (string, error) {
	switch {
	case c.w.bad&bodyAgent != 0:
		return "", badField("conversation.answering_agent_public_id", "answering_agent_public_id must be an agent's public id.")
	case c.w.has(bodyAgent) || c.AnsweringAgentPublicID != "":
		return c.AnsweringAgentPublicID, nil
	case a.Kind == store.KindAgent:
		return a.PublicID, nil
	}
	return "", badField("conversation.answering_agent_public_id", "A user names the answering agent.")
}

// titleOK reports whether the conversation's title keeps its rule.
func (c *NewConversation) titleOK(ok func(string) bool) bool {
	return c.w.bad&bodyTitle == 0 && (c.Title == nil || ok(*c.Title))
}

// runner is the conversation's default Runner as written: "" for none; ok false for an id no
// Runner can have.
func (c *NewConversation) runner() (id string, ok bool) {
	id = c.DefaultRunnerExecutorPublicID
	if !c.w.has(bodyRunner) && id == "" {
		return "", true
	}
	return id, c.w.bad&bodyRunner == 0 && store.IsPublicID(id)
}

// check judges the message in the door's order (docs/api.md#conversations): its shape, its keys,
// text, attachments, then text's emptiness, tool_names and model. Whether the uploads, the tools
// and the model exist is read after.
func (m *Message) check() error {
	w := &m.w
	switch {
	case w.notObject:
		return badField("message", "message must be an object.")
	case w.unknown != "":
		return badField("message."+w.unknown, "message.%s is not a message field.", w.unknown)
	case w.bad&bodyText != 0:
		return badField("message.text", "text must be a string.")
	case w.bad&bodyAttachments != 0:
		return refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "attachments must be an array of upload ids.").With("path", "message.attachments")
	case len(m.Attachments) > steps.MaxAttachments:
		return badField("message.attachments", "At most %d attachments.", steps.MaxAttachments)
	}
	for i, id := range m.Attachments {
		if !store.IsPublicID(id) {
			return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "message.attachments[%d] is not an upload id.", i).
				With("path", fmt.Sprintf("message.attachments[%d]", i))
		}
	}
	switch {
	case m.Text == "" && len(m.Attachments) == 0:
		return badField("message.text", "text may be empty only with attachments.")
	case w.bad&bodyToolNames != 0:
		return badField("message.tool_names", "tool_names must be an array of names.")
	case w.bad&bodyModel != 0:
		return refusal.New(refusal.Unprocessable, runs.CodeUnknownModel, "model must be a provider/model string.").With("path", "message.model")
	}
	return nil
}
