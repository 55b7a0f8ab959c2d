package kernel

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArgumentSentences pins docs/agent-tools.md#what-a-model-reads: one case per row of the
// sentence table, the check order (unknown keys first, the first in byte order; then properties in
// schema order), null as absent, whole numbers, and the refusal form of
// docs/agent-tools.md#what-a-model-reads.
func TestArgumentSentences(t *testing.T) {
	t.Parallel()
	// A schema with one property of every kind, in this order.
	params := []string{"prompt", "wait", "limit", "offset", "mode", "tools", "input", "model", "runner", "agent"}
	read := func(in string, closed bool) *ArgumentsError {
		a, err := ReadArgs(json.RawMessage(in), params, closed)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		a.String("prompt", true, true)
		a.Bool("wait", false, false)
		a.Int("limit", false, 1, 20, 5)
		a.Int("offset", false, 0, NoMax, 0)
		a.Enum("mode", false, "turn", "turn", "conversation")
		a.Strings("tools", false)
		a.Object("input", false)
		a.StringOrNull("model")
		a.UUID("runner", false)
		a.HandleOrUUID("agent", false)
		return a.Err()
	}
	cases := []struct {
		in     string
		closed bool
		want   string
	}{
		{`{"prompt":"x","zeta":1,"alpha":2}`, true, "alpha is not a parameter; the parameters are prompt, wait, limit, offset, mode, tools, input, model, runner, agent."},
		{`{"prompt":"x","zeta":1}`, false, ""},
		{`{}`, true, "prompt is required."},
		{`{"prompt":null}`, true, "prompt is required."},
		{`{"prompt":5}`, true, "prompt must be a string."},
		{`{"prompt":" \n\t"}`, true, "prompt is empty."},
		{`{"prompt":"x","wait":"yes"}`, true, "wait must be true or false."},
		{`{"prompt":"x","wait":null,"limit":21}`, true, "limit must be an integer from 1 to 20."},
		{`{"prompt":"x","limit":"5"}`, true, "limit must be an integer from 1 to 20."},
		{`{"prompt":"x","limit":2.5}`, true, "limit must be an integer from 1 to 20."},
		{`{"prompt":"x","limit":5.0,"offset":-1}`, true, "offset must be an integer of at least 0."},
		{`{"prompt":"x","mode":"forever"}`, true, "mode must be one of turn, conversation."},
		{`{"prompt":"x","tools":["a",null]}`, true, "tools must be an array of strings."},
		{`{"prompt":"x","tools":"a"}`, true, "tools must be an array of strings."},
		{`{"prompt":"x","input":[1]}`, true, "input must be an object."},
		{`{"prompt":"x","model":7}`, true, "model must be a string or null."},
		{`{"prompt":"x","model":null,"runner":"0190a5e2-0000-7000-8000"}`, true, "runner must be a UUID."},
		{`{"prompt":"x","agent":"ana"}`, true, "agent must be an @handle or a UUID."},
		{`{"prompt":"x","agent":"@Ana"}`, true, "agent must be an @handle or a UUID."},
		{`{"prompt":"x","agent":"@ana","runner":"0190A5E2-0000-7000-8000-0000000000AA","limit":1e1}`, true, ""},
		{`{"prompt":"x","agent":"0190a5e2-0000-7000-8000-0000000000aa"}`, true, ""},
		// The first failing property in schema order wins, whatever the key order.
		{`{"agent":"x","limit":0,"prompt":"x"}`, true, "limit must be an integer from 1 to 20."},
	}
	for _, c := range cases {
		got := ""
		if e := read(c.in, c.closed); e != nil {
			got = e.Sentence
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	a, err := ReadArgs(json.RawMessage(`{"x":1}`), nil, true)
	if err != nil || a.Err() == nil || a.Err().Sentence != "x is not a parameter; this tool takes no parameters." {
		t.Fatalf("no parameters: %v %+v", err, a.Err())
	}
	if _, err := ReadArgs(json.RawMessage(`[1]`), nil, true); err == nil {
		t.Fatal("an array input read as arguments")
	}
	// The example of docs/agent-tools.md#what-a-model-reads: ask called with a question it does not
	// take.
	a, _ = ReadArgs(json.RawMessage(`{"question":"Deploy now?"}`), []string{"prompt", "options", "multi"}, true)
	out := argumentsRefused("ask", a.Err())
	want := &struct {
		Content, Title, SC string
		IsError            bool
	}{"invalid_arguments: question is not a parameter; the parameters are prompt, options, multi.", "ask refused",
		`{"error":{"key":"invalid_arguments","detail":"question is not a parameter; the parameters are prompt, options, multi."}}`, true}
	got := &struct {
		Content, Title, SC string
		IsError            bool
	}{out.Result.Content, out.Result.Title, string(out.Result.StructuredContent), out.Result.IsError}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	if r := ErrorResult("status", "no_conversation", "").Result; r.Content != "no_conversation" || r.Title != "status refused" || string(r.StructuredContent) != `{"error":{"key":"no_conversation"}}` {
		t.Fatalf("word alone: %+v", r)
	}
}
