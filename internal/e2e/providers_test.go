package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/model/modeltest"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// providerKey is the distinctive credential of the provider runs: it must appear in no log
// line, stored row or HTTP answer.
const providerKey = "nexus-e2e-key-4f9d2a71c3"

// call is one tool call a fake provider answers with.
type call struct {
	name string
	args map[string]any
}

// wireKit writes the answers of one provider type in its real wire format.
type wireKit struct {
	typ    string
	model  string
	calls  func(round int, cs []call) modeltest.Reply
	text   func(s string) modeltest.Reply
	cut    func() modeltest.Reply
	busy   func() modeltest.Reply
	full   func() modeltest.Reply
	image  string // how the attachment reads on the wire
	result string // how a tool result reads on the wire
}

func sseReply(events ...string) modeltest.Reply {
	return modeltest.Reply{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}, "X-Request-Id": {"req_e2e"}, "Request-Id": {"req_e2e"}},
		Body: strings.Join(events, "\n") + "\n", SSE: true}
}

func jsonReply(status int, header http.Header, body string) modeltest.Reply {
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range header {
		h[k] = v
	}
	return modeltest.Reply{Status: status, Header: h, Body: body}
}

func dataLine(v any) string {
	b, _ := json.Marshal(v)
	return "data: " + string(b) + "\n"
}

func eventLine(name string, v any) string { return "event: " + name + "\n" + dataLine(v) }

// pieces splits s into chunks of n bytes: the SSE answers arrive split.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

var openaiKit = wireKit{
	typ: "openai", model: "fake-openai/m",
	calls: func(round int, cs []call) modeltest.Reply {
		chunk := func(delta map[string]any, finish any) string {
			return dataLine(map[string]any{"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "model": "gpt-test",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		}
		ev := []string{chunk(map[string]any{"role": "assistant", "content": nil}, nil)}
		for i, c := range cs {
			args, _ := json.Marshal(c.args)
			ev = append(ev, chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_r%d_%d", round, i), "type": "function",
				"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil))
			for _, p := range pieces(string(args), 5) {
				ev = append(ev, chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
			}
		}
		ev = append(ev, chunk(map[string]any{}, "tool_calls"),
			dataLine(map[string]any{"id": "chatcmpl-e2e", "choices": []any{}, "usage": map[string]any{"prompt_tokens": 900, "completion_tokens": 30,
				"prompt_tokens_details": map[string]any{"cached_tokens": 512}}}), "data: [DONE]\n")
		return sseReply(ev...)
	},
	text: func(s string) modeltest.Reply {
		var ev []string
		for _, p := range pieces(s, 3) {
			ev = append(ev, dataLine(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": p}, "finish_reason": nil}}}))
		}
		ev = append(ev, dataLine(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}}),
			dataLine(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 1000, "completion_tokens": 5}}), "data: [DONE]\n")
		return sseReply(ev...)
	},
	cut: func() modeltest.Reply {
		return sseReply(dataLine(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": "ship"}, "finish_reason": nil}}}), "!cut")
	},
	busy: func() modeltest.Reply {
		return jsonReply(429, http.Header{"Retry-After": {"1"}}, `{"error":{"message":"Rate limit reached for requests.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
	},
	full: func() modeltest.Reply {
		return jsonReply(400, nil, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
	},
	image:  `"url":"data:image/png;base64,`,
	result: `"role":"tool","tool_call_id":"call_r1_0"`,
}

var anthropicKit = wireKit{
	typ: "anthropic", model: "fake-anthropic/m",
	calls: func(round int, cs []call) modeltest.Reply {
		ev := []string{eventLine("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_e2e", "type": "message", "role": "assistant",
			"content": []any{}, "usage": map[string]any{"input_tokens": 388, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 512, "output_tokens": 1}}})}
		for i, c := range cs {
			args, _ := json.Marshal(c.args)
			ev = append(ev, eventLine("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_r%d_%d", round, i), "name": c.name, "input": map[string]any{}}}))
			for _, p := range pieces(string(args), 5) {
				ev = append(ev, eventLine("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": p}}))
			}
			ev = append(ev, eventLine("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}))
		}
		ev = append(ev, eventLine("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]any{"output_tokens": 30}}),
			eventLine("message_stop", map[string]any{"type": "message_stop"}))
		return sseReply(ev...)
	},
	text: func(s string) modeltest.Reply {
		ev := []string{eventLine("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_e2e", "usage": map[string]any{"input_tokens": 1000, "output_tokens": 1}}}),
			eventLine("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})}
		for _, p := range pieces(s, 3) {
			ev = append(ev, eventLine("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": p}}))
		}
		ev = append(ev, eventLine("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
			eventLine("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": 5}}),
			eventLine("message_stop", map[string]any{"type": "message_stop"}))
		return sseReply(ev...)
	},
	cut: func() modeltest.Reply {
		return sseReply(eventLine("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_e2e"}}), "!cut")
	},
	busy: func() modeltest.Reply {
		return jsonReply(429, http.Header{"Retry-After": {"1"}}, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
	},
	full: func() modeltest.Reply {
		return jsonReply(400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208656 tokens > 200000 maximum"}}`)
	},
	image:  `"type":"image","source":{"type":"base64","media_type":"image/png","data":"`,
	result: `"type":"tool_result","tool_use_id":"toolu_r1_0"`,
}

// providerConfig points both provider types at their fakes.
func providerConfig(kit wireKit, url string) string {
	base := url
	if kit.typ == "openai" {
		base += "/v1"
	}
	return fmt.Sprintf(`
default_model = %q
model_provider "fake-%s" {
  type     = %q
  base_url = %q
  api_key  = env("NEXUS_TEST_KEY")
}
model %q {
  id           = "fake-model-id"
  display_name = "Fake %s"
  capabilities {
    tools             = true
    vision            = true
    pdf               = true
    context_window    = 200000
    max_output_tokens = 4096
  }
  pricing {
    input_per_mtok        = 3
    output_per_mtok       = 15
    cached_input_per_mtok = 0.30
    currency              = "USD"
  }
}
`, kit.model, kit.typ, kit.typ, base, kit.model, kit.typ)
}

// recorder keeps every HTTP answer the test's clients read.
type recorder struct {
	mu     sync.Mutex
	bodies bytes.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	fmt.Fprintf(&r.bodies, "%s %s\n%v\n%s\n", req.Method, req.URL.Path, resp.Header, b)
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// storedText is every row of every table as text.
func storedText(t *testing.T, st *store.Store) string {
	t.Helper()
	db := st.DB()
	q := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if st.Dialect() == store.Postgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 10 {
		t.Fatalf("only %d tables found", len(tables))
	}
	var out strings.Builder
	for _, tb := range tables {
		rs, err := db.Query(`SELECT * FROM ` + tb)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rs.Next() {
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				out.Write(v)
				out.WriteByte('\t')
			}
			out.WriteByte('\n')
		}
		rs.Close()
	}
	return out.String()
}

// TestProviderRuns runs a conversation turn on each real adapter against a local fake provider
// that speaks the real wire, on both stores: the model searches a Runner's deferred tool and
// asks the person in two parallel calls (SSE with split chunks), answers a 429 then calls the
// tool through tool_call (a real runner serves it), is cut mid-stream and answers on the retry;
// the message carries an image attachment. The next turn meets a context overflow. Every openai
// request is checked against OpenAI's published definition, and the key appears in no log line,
// stored row or HTTP answer.
func TestProviderRuns(t *testing.T) {
	t.Parallel()
	validate, err := modeltest.OpenAIValidator()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range storetest.Dialects() {
		for _, kit := range []wireKit{openaiKit, anthropicKit} {
			t.Run(string(d)+"/"+kit.typ, func(t *testing.T) {
				t.Parallel()
				providerRun(t, d, kit, validate)
			})
		}
	}
}

func providerRun(t *testing.T, d store.Dialect, kit wireKit, validate func([]byte) error) {
	fake := modeltest.NewFake(t,
		kit.calls(1, []call{{"tool_search", map[string]any{"query": "deploy"}}, {"ask", map[string]any{"prompt": "Ship to production?", "options": []string{"yes", "no"}}}}),
		kit.busy(),
		kit.calls(2, []call{{"tool_call", map[string]any{"name": "deploy", "input": map[string]any{"env": "staging"}}}}),
		kit.cut(),
		kit.text("shipped"),
		kit.full())
	fake.Check = func(body []byte) string {
		if kit.typ == "openai" {
			if err := validate(body); err != nil {
				t.Errorf("a request OpenAI's definition refuses: %v\n%s", err, body)
				return "invalid request"
			}
		}
		return ""
	}
	rec := &recorder{}
	s := newScenario(t, d, providerConfig(kit, fake.URL), rec, func(r string) client.ProfileConfiguration {
		return client.ProfileConfiguration{KernelTools: []string{"nexus.tools.search", "nexus.tools.call", "nexus.human.ask"}, RunnerExecutorPublicIDs: []string{r}}
	})
	srv, admin, ctx := s.srv, s.admin, s.ctx

	// The catalog served is the configured one.
	models, err := admin.Models(ctx, "", 0, 0)
	if err != nil || !strings.Contains(string(models), `"ref":"`+kit.model+`"`) || !strings.Contains(string(models), `"display_name":"Fake `+kit.typ+`"`) ||
		strings.Contains(string(models), "fake-model-id") {
		t.Fatalf("models %s %v", models, err)
	}
	up, err := admin.CreateUpload(ctx, "shot.png", bytes.NewReader(pngBytes))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := admin.PostMessage(ctx, "default", s.conv, map[string]any{"text": "Ship the release.", "attachments": []string{up.Upload.PublicID}}, "")
	if err != nil {
		t.Fatal(err)
	}
	run := msg.Run.PublicID
	row := inboxAsk(t, admin, run)
	if row["prompt"] != "Ship to production?" {
		t.Fatalf("ask %v", row)
	}
	if res, err := admin.Resolve(ctx, "default", run, "r2t1", json.RawMessage(`{"content":"yes"}`)); err != nil || !res.Applied {
		t.Fatalf("answer: %v", err)
	}
	final := waitRun(t, admin, run, 60*time.Second)
	if final.Status != "completed" || deref(final.Answer) != "shipped" {
		t.Fatalf("run %s answer %q", final.Status, deref(final.Answer))
	}

	reqs := fake.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	for i, r := range reqs {
		if got := r.Header.Get("User-Agent"); got != "nexus/test" {
			t.Errorf("request %d user agent %q", i, got)
		}
		if strings.Contains(string(r.Body), providerKey) || strings.Contains(string(r.Body), "fake-"+kit.typ+"/m") {
			t.Errorf("request %d carries the key or the catalog ref", i)
		}
		if !strings.Contains(string(r.Body), `"model":"fake-model-id"`) {
			t.Errorf("request %d does not name the provider's model id", i)
		}
	}
	if !strings.Contains(string(reqs[0].Body), kit.image) {
		t.Errorf("the first request does not carry the attachment: %s", reqs[0].Body)
	}
	if !bytes.Equal(reqs[1].Body, reqs[2].Body) || !bytes.Equal(reqs[3].Body, reqs[4].Body) {
		t.Error("a retried request sent other bytes than its first attempt")
	}
	if !strings.Contains(string(reqs[1].Body), kit.result) || !strings.Contains(string(reqs[1].Body), `<answer task=\"r2t1-ask-1\">yes</answer>`) {
		t.Errorf("the continuation does not carry the results: %s", reqs[1].Body)
	}
	if !strings.Contains(string(reqs[3].Body), "deployed to staging") {
		t.Errorf("the last round does not carry the runner's result: %s", reqs[3].Body)
	}

	r1 := task(t, admin, run, "r1")
	if r1.Task.Finish != "tool_calls" || !strings.Contains(string(r1.Raw), `"cached_input_tokens":512`) || !strings.Contains(string(r1.Raw), `"cost":{"amount":`) {
		t.Errorf("r1 read %s", r1.Raw)
	}
	if c := task(t, admin, run, "r3t0-call-1").Task; deref(c.Output) != "deployed to staging" {
		t.Errorf("the deferred tool ran as %s %q", c.Status, deref(c.Output))
	}
	sealed, err := admin.SealedRequest(ctx, "default", run, "r1")
	if err != nil || !strings.Contains(string(sealed), `"type":"attachment","upload_public_id":"`+up.Upload.PublicID+`"`) {
		t.Errorf("sealed r1 %s %v", sealed, err)
	}

	// The next turn does not fit the provider's window.
	msg2, err := admin.PostMessage(ctx, "default", s.conv, map[string]any{"text": "And production?"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if r := waitRun(t, admin, msg2.Run.PublicID, 30*time.Second); r.Status != "needs_attention" {
		t.Fatalf("second run %s", r.Status)
	}
	if r1 := task(t, admin, msg2.Run.PublicID, "r1"); r1.Task.Status != "failed" || r1.Task.Error == nil || r1.Task.Error.Key != "provider_context_overflow" {
		t.Fatalf("overflow round %s", r1.Raw)
	}
	if n := len(fake.Requests()); n != 6 {
		t.Errorf("%d requests after the overflow, want 6 (it is not retried)", n)
	}

	// The key is nowhere a person or a log can read it.
	rec.mu.Lock()
	answers := rec.bodies.String()
	rec.mu.Unlock()
	for what, text := range map[string]string{"a log line": srv.Logs(), "a stored row": storedText(t, srv.Server().Store()), "an HTTP answer": answers} {
		if strings.Contains(text, providerKey) {
			t.Errorf("the key appears in %s", what)
		}
	}
	if !strings.Contains(srv.Logs(), "model call attempt") {
		t.Error("no attempt was logged, so the log check proves nothing")
	}
}
