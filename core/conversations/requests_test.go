package conversations

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
)

func refusedAt(t *testing.T, name string, err error, kind refusal.Kind, code, path string) {
	t.Helper()
	r, ok := refusal.As(err)
	if code == "" {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return
	}
	p, _ := r.Get("path")
	if !ok || r.Code != code || r.Kind != kind || p != path {
		t.Errorf("%s: got %v at %v, want %s (kind %d) at %s", name, err, p, code, kind, path)
	}
}

// TestMessageCheck pins the message's words in the door's order for what a body writes, and
// holds a message built in Go to the same rules.
func TestMessageCheck(t *testing.T) {
	t.Parallel()
	id := "6f1b2c3d-0000-4000-8000-000000000001"
	many := `"` + strings.TrimSuffix(strings.Repeat(id+`","`, steps.MaxAttachments+1), `","`) + `"`
	for _, c := range []struct {
		name, body string
		kind       refusal.Kind
		code, path string
	}{
		{"not an object", `[]`, refusal.Unprocessable, refusal.CodeValidationFailed, "message"},
		{"first unknown key", `{"zeta":1,"alpha":1,"text":5}`, refusal.Unprocessable, refusal.CodeValidationFailed, "message.alpha"},
		{"text not a string", `{"text":5,"attachments":1}`, refusal.Unprocessable, refusal.CodeValidationFailed, "message.text"},
		{"attachments not a list", `{"text":"x","attachments":"x"}`, refusal.BadRequest, refusal.CodeParameterInvalid, "message.attachments"},
		{"attachment not a string", `{"text":"x","attachments":[1]}`, refusal.BadRequest, refusal.CodeParameterInvalid, "message.attachments"},
		{"too many", `{"text":"x","attachments":[` + many + `]}`, refusal.Unprocessable, refusal.CodeValidationFailed, "message.attachments"},
		{"null attachment", `{"text":"x","attachments":[null]}`, refusal.BadRequest, refusal.CodeParameterInvalid, "message.attachments[0]"},
		{"empty text", `{"text":"","tool_names":5}`, refusal.Unprocessable, refusal.CodeValidationFailed, "message.text"},
		{"null text", `{"text":null}`, refusal.Unprocessable, refusal.CodeValidationFailed, "message.text"},
		{"tool_names", `{"text":"x","tool_names":"x","model":5}`, refusal.Unprocessable, refusal.CodeValidationFailed, "message.tool_names"},
		{"model", `{"text":"x","model":5}`, refusal.Unprocessable, runs.CodeUnknownModel, "message.model"},
		{"empty text with an attachment", `{"text":"","attachments":["` + id + `"],"tool_names":null,"model":null}`, 0, "", ""},
		{"empty model", `{"text":"x","model":""}`, 0, "", ""},
	} {
		var m Message
		if err := json.Unmarshal([]byte(c.body), &m); err != nil {
			t.Fatal(err)
		}
		refusedAt(t, c.name, m.check(), c.kind, c.code, c.path)
	}
	var m Message
	_ = json.Unmarshal([]byte(`{"text":"x","tool_names":[]}`), &m)
	if m.ToolNames == nil || len(m.ToolNames) != 0 {
		t.Fatalf("tool_names [] reads %#v, want an empty list", m.ToolNames)
	}
	refusedAt(t, "built without text", (&Message{}).check(), refusal.Unprocessable, refusal.CodeValidationFailed, "message.text")
	refusedAt(t, "built with a bad id", (&Message{Text: "x", Attachments: []string{"nope"}}).check(), refusal.BadRequest, refusal.CodeParameterInvalid, "message.attachments[0]")
}

// TestNewConversationDecode pins what a conversation body can write that the Go value cannot:
// the door refuses each at its place, and an empty id is an id, not an absent one.
func TestNewConversationDecode(t *testing.T) {
	t.Parallel()
	user := &runs.Actor{Kind: "user", PublicID: "u"}
	agent := &runs.Actor{Kind: "agent", PublicID: "a"}
	decode := func(body string) *NewConversation {
		c := &NewConversation{}
		if err := json.Unmarshal([]byte(body), c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	refusedAt(t, "not an object", decode(`"x"`).check(), refusal.Unprocessable, refusal.CodeValidationFailed, "conversation")
	refusedAt(t, "unknown key", decode(`{"zeta":1,"beta":2}`).check(), refusal.Unprocessable, refusal.CodeValidationFailed, "conversation.beta")
	for _, c := range []struct {
		body string
		a    *runs.Actor
		ref  string
		code string
	}{
		{`{"answering_agent_public_id":"x"}`, user, "x", ""},
		{`{"answering_agent_public_id":""}`, agent, "", ""},
		{`{"answering_agent_public_id":null}`, agent, "a", ""},
		{`{}`, user, "", refusal.CodeValidationFailed},
		{`{"answering_agent_public_id":7}`, agent, "", refusal.CodeValidationFailed},
	} {
		ref, err := decode(c.body).agentRef(c.a)
		if ref != c.ref || (c.code == "") != (err == nil) {
			t.Errorf("%s as %s: %q %v", c.body, c.a.Kind, ref, err)
		}
	}
	ok := func(string) bool { return true }
	if decode(`{"title":5}`).titleOK(ok) || !decode(`{"title":null}`).titleOK(func(string) bool { return false }) {
		t.Error("title: a number passes, or a null is judged")
	}
	for body, want := range map[string]bool{`{}`: true, `{"default_runner_executor_public_id":null}`: true,
		`{"default_runner_executor_public_id":""}`: false, `{"default_runner_executor_public_id":5}`: false,
		`{"default_runner_executor_public_id":"0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}`: true} {
		if _, got := decode(body).runner(); got != want {
			t.Errorf("%s: runner well formed %v, want %v", body, got, want)
		}
	}
}
