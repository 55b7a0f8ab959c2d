package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/model/modeltest"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
	"github.com/nexuskernel/nexus/sdk/runner"
)

// providerModel is a model block of a fake provider.
func providerModel(ref, extraCaps, extra string) string {
	return fmt.Sprintf(`
model %q {
  id = "fake-model-id"
  capabilities {
    tools             = true
    vision            = true
    pdf               = true
%s    context_window    = 200000
    max_output_tokens = 4096
  }
%s}
`, ref, extraCaps, extra)
}

func providerBlock(name, typ, url, extra string) string {
	return fmt.Sprintf("model_provider %q {\n  type     = %q\n  base_url = %q\n  api_key  = env(\"NEXUS_TEST_KEY\")\n%s}\n", name, typ, url, extra)
}

// scenario is a server with fake providers, an agent and its conversation.
type scenario struct {
	t      *testing.T
	srv    *testserver.Instance
	admin  *client.Client
	ctx    context.Context
	conv   string
	agent  string
	runner string
}

// newScenario starts the server with a Runner serving deploy, an agent whose configuration
// profile gives and its conversation; the owner's client goes through transport when one is
// given.
func newScenario(t *testing.T, d store.Dialect, config string, transport http.RoundTripper, profile func(runner string) client.ProfileConfiguration) *scenario {
	t.Helper()
	srv := testserver.Start(t, testserver.Options{Dialect: d, Config: config + "\nkernel {\n  sweep_interval = \"50ms\"\n}\n",
		Env: map[string]string{"NEXUS_TEST_KEY": providerKey}})
	s := &scenario{t: t, srv: srv, admin: srv.Client()}
	if transport != nil {
		s.admin = client.New(srv.URL, srv.AdminToken, client.WithHTTPClient(&http.Client{Transport: transport}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.ctx = ctx
	ex, err := s.admin.CreateExecutor(ctx, &client.CreateExecutorRequest{Kind: "runner", DisplayName: "Workstation", WorkspacePublicID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	deploy := announce.Tool{Name: "deploy", Description: ptrTo("Deploy the current build to an environment."),
		InputSchema:   json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}},"required":["env"]}`),
		EffectProfile: announce.Announced(announce.EffectReadOnly)}
	rn := &runner.Runner{Client: srv.ClientWith(ex.Token), Environment: json.RawMessage(`{"os":"linux"}`), Poll: 100 * time.Millisecond,
		Tools: []runner.Tool{{Announce: deploy, Handle: func(_ context.Context, c *runner.Call) (*client.Result, error) {
			var in struct {
				Env string `json:"env"`
			}
			if err := json.Unmarshal(c.Input, &in); err != nil {
				return nil, err
			}
			return &client.Result{Content: "deployed to " + in.Env}, nil
		}}}}
	if err := rn.Announce(ctx); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- rn.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-served })
	agent, err := s.admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "lead", DisplayName: "Lead"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := profile(ex.Executor.PublicID)
	mode := "bypass"
	cfg.ApprovalMode = &mode
	if _, err := srv.ClientWith(agent.Token).PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: cfg}); err != nil {
		t.Fatal(err)
	}
	conv, err := s.admin.CreateConversation(ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID,
		"default_runner_executor_public_id": ex.Executor.PublicID})
	if err != nil {
		t.Fatal(err)
	}
	s.conv, s.agent, s.runner = conv.Conversation.PublicID, agent.Agent.PublicID, ex.Executor.PublicID
	return s
}

// turn posts a message and waits for its run to settle.
func (s *scenario) turn(msg map[string]any, want string) string {
	s.t.Helper()
	m, err := s.admin.PostMessage(s.ctx, "default", s.conv, msg, "")
	if err != nil {
		s.t.Fatal(err)
	}
	if r := waitRun(s.t, s.admin, m.Run.PublicID, 60*time.Second); r.Status != want {
		s.t.Fatalf("run %s is %s, want %s", m.Run.PublicID, r.Status, want)
	}
	return m.Run.PublicID
}

func (s *scenario) sealed(run, key string) string {
	s.t.Helper()
	b, err := s.admin.SealedRequest(s.ctx, "default", run, key)
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// anthropicBlocks answers with these content blocks (thinking, server tool blocks, tool_use),
// streamed, and the stop reason.
func anthropicBlocks(stop string, blocks ...map[string]any) modeltest.Reply {
	ev := []string{eventLine("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_e2e", "usage": map[string]any{"input_tokens": 300, "output_tokens": 1}}})}
	for i, b := range blocks {
		start := map[string]any{}
		for k, v := range b {
			start[k] = v
		}
		var deltas []map[string]any
		switch b["type"] {
		case "thinking":
			start["thinking"], start["signature"] = "", ""
			deltas = []map[string]any{{"type": "thinking_delta", "thinking": b["thinking"]}, {"type": "signature_delta", "signature": b["signature"]}}
		case "tool_use", "server_tool_use":
			in, _ := json.Marshal(b["input"])
			start["input"] = map[string]any{}
			for _, p := range pieces(string(in), 4) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
			}
		case "text":
			start["text"] = ""
			deltas = []map[string]any{{"type": "text_delta", "text": b["text"]}}
		}
		ev = append(ev, eventLine("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start}))
		for _, d := range deltas {
			ev = append(ev, eventLine("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}))
		}
		ev = append(ev, eventLine("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}))
	}
	ev = append(ev, eventLine("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 20}}),
		eventLine("message_stop", map[string]any{"type": "message_stop"}))
	return sseReply(ev...)
}

const thinkingSignature = "EqQBCkYIARgCKkA4nB2Bq3Xs0uPBZ-e2e"

// TestProviderThinkingAndNativeSearch: a thinking block and a call come back from an anthropic
// model with thinking enabled; the continuation's assistant message begins with the identical
// block, and request_options records the reasoning; the next turn, on an openai model, carries no
// thinking block. On a native-deferral provider, a set whose Runner tools are deferred without
// the kernel's pair sends the search tool and defer_loading, the answer's server blocks run the
// deferred tool, and the continuation replays them.
func TestProviderThinkingAndNativeSearch(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			an := modeltest.NewFake(t,
				anthropicBlocks("tool_use", map[string]any{"type": "thinking", "thinking": "The user wants a deploy.", "signature": thinkingSignature},
					map[string]any{"type": "tool_use", "id": "toolu_1", "name": "deploy", "input": map[string]any{"env": "staging"}}),
				anthropicBlocks("end_turn", map[string]any{"type": "text", "text": "deployed it"}))
			native := modeltest.NewFake(t,
				anthropicBlocks("tool_use", map[string]any{"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": map[string]any{"query": "deploy"}},
					map[string]any{"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": map[string]any{"type": "tool_search_tool_search_result",
						"tool_references": []any{map[string]any{"type": "tool_reference", "tool_name": "deploy"}}}},
					map[string]any{"type": "tool_use", "id": "toolu_2", "name": "deploy", "input": map[string]any{"env": "prod"}}),
				anthropicBlocks("end_turn", map[string]any{"type": "text", "text": "found and deployed"}))
			oa := modeltest.NewFake(t, openaiKit.text("no thinking here"))
			config := `default_model = "fake-anthropic/m"` + "\n" +
				providerBlock("fake-anthropic", "anthropic", an.URL, "") +
				providerModel("fake-anthropic/m", "    reasoning = true\n", "  reasoning {\n    thinking      = \"enabled\"\n    budget_tokens = 1024\n  }\n") +
				providerBlock("fake-native", "anthropic", native.URL, "  tool_deferral = \"native\"\n") + providerModel("fake-native/m", "", "") +
				providerBlock("fake-openai", "openai", oa.URL+"/v1", "") + providerModel("fake-openai/m", "", "")
			s := newScenario(t, d, config, nil, func(r string) client.ProfileConfiguration {
				return client.ProfileConfiguration{RunnerExecutorPublicIDs: []string{r}}
			})

			run1 := s.turn(map[string]any{"text": "Deploy to staging."}, "completed")
			reqs := an.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d anthropic requests", len(reqs))
			}
			// The fake writes its blocks with sorted keys; they come back byte for byte as sent.
			block := `{"signature":"` + thinkingSignature + `","thinking":"The user wants a deploy.","type":"thinking"}`
			if !strings.Contains(string(reqs[1].Body), `{"role":"assistant","content":[`+block+`,{"type":"tool_use","id":"toolu_1"`) {
				t.Errorf("the continuation does not begin with the thinking block: %s", reqs[1].Body)
			}
			if !strings.Contains(string(reqs[0].Body), `"thinking":{"type":"enabled","budget_tokens":1024}`) || strings.Contains(string(reqs[0].Body), "defer_loading") {
				t.Errorf("the first request %s", reqs[0].Body)
			}
			if r1 := s.sealed(run1, "r1"); !strings.Contains(r1, `"reasoning":{"thinking":"enabled","budget_tokens":1024}`) {
				t.Errorf("sealed r1 %s", r1)
			}
			if r2 := s.sealed(run1, "r2"); !strings.Contains(r2, `{"type":"provider_block","format":"anthropic","block":`+block+`}`) {
				t.Errorf("sealed r2 %s", r2)
			}

			s.turn(map[string]any{"text": "And now?", "model": "fake-openai/m"}, "completed")
			if b := string(oa.Requests()[0].Body); strings.Contains(b, "thinking") || strings.Contains(b, thinkingSignature) || !strings.Contains(b, "Deploy to staging.") {
				t.Errorf("the openai turn %s", b)
			}

			s.turn(map[string]any{"text": "Find the deploy tool and run it.", "model": "fake-native/m"}, "completed")
			nr := native.Requests()
			if len(nr) != 2 {
				t.Fatalf("%d native requests", len(nr))
			}
			if !strings.Contains(string(nr[0].Body), `"tools":[{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"},{"name":"deploy"`) ||
				!strings.Contains(string(nr[0].Body), `"defer_loading":true`) {
				t.Errorf("the native request %s", nr[0].Body)
			}
			if !strings.Contains(string(nr[1].Body), `{"id":"srvtoolu_1","input":{"query":"deploy"},"name":"tool_search_tool_bm25","type":"server_tool_use"},{"content":{"tool_references":[{"tool_name":"deploy","type":"tool_reference"}],"type":"tool_search_tool_search_result"},"tool_use_id":"srvtoolu_1","type":"tool_search_tool_result"},{"type":"tool_use","id":"toolu_2"`) {
				t.Errorf("the continuation does not replay the server blocks: %s", nr[1].Body)
			}
			if strings.Contains(string(nr[0].Body), thinkingSignature) {
				t.Error("a thinking block of another model reached the native provider")
			}
		})
	}
}

// pdfBytes is a document the upload store detects as PDF.
var pdfBytes = []byte("%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")

// TestProviderMediaLimitsAndRefusalMemory: an image over the anthropic byte limit is sealed as an
// index line and absent from the wire while a small one is sent, and a second small one over the
// model's images_max of 1 is an index line too; a PDF the provider refuses by
// its location fails the round provider_media_refused, and the member's next message is sealed
// with it as "refused by this model" and completes.
func TestProviderMediaLimitsAndRefusalMemory(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			an := modeltest.NewFake(t,
				anthropicBlocks("end_turn", map[string]any{"type": "text", "text": "one image"}),
				jsonReply(400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.2.content.1.pdf.source.base64.data: the PDF has too many pages"}}`),
				anthropicBlocks("end_turn", map[string]any{"type": "text", "text": "read without it"}))
			s := newScenario(t, d, `default_model = "fake-anthropic/m"`+"\n"+providerBlock("fake-anthropic", "anthropic", an.URL, "")+
				providerModel("fake-anthropic/m", "", "  media {\n    images_max = 1\n  }\n"), nil,
				func(string) client.ProfileConfiguration { return client.ProfileConfiguration{} })
			big := append(append([]byte{}, pngBytes...), bytes.Repeat([]byte{9}, 4_000_000)...)
			bigUp, err := s.admin.CreateUpload(s.ctx, "big.png", bytes.NewReader(big))
			if err != nil {
				t.Fatal(err)
			}
			small, err := s.admin.CreateUpload(s.ctx, "small.png", bytes.NewReader(pngBytes))
			if err != nil {
				t.Fatal(err)
			}
			second, err := s.admin.CreateUpload(s.ctx, "second.png", bytes.NewReader(pngBytes))
			if err != nil {
				t.Fatal(err)
			}
			run1 := s.turn(map[string]any{"text": "Look.", "attachments": []string{bigUp.Upload.PublicID, small.Upload.PublicID, second.Upload.PublicID}}, "completed")
			line := fmt.Sprintf("[attachment big.png image/png %d bytes nexus://uploads/%s: too large for this model]", len(big), bigUp.Upload.PublicID)
			over := fmt.Sprintf("[attachment second.png image/png %d bytes nexus://uploads/%s: over this request's attachment limit]", len(pngBytes), second.Upload.PublicID)
			if r1 := s.sealed(run1, "r1"); !strings.Contains(r1, line) || !strings.Contains(r1, over) ||
				!strings.Contains(r1, `"type":"attachment","upload_public_id":"`+small.Upload.PublicID+`"`) {
				t.Errorf("sealed r1 %s", r1)
			}
			if b := string(an.Requests()[0].Body); strings.Count(b, `"type":"image"`) != 1 || len(b) > 100_000 {
				t.Errorf("the wire carries %d images in %d bytes", strings.Count(b, `"type":"image"`), len(b))
			}
			doc, err := s.admin.CreateUpload(s.ctx, "doc.pdf", bytes.NewReader(pdfBytes))
			if err != nil {
				t.Fatal(err)
			}
			run2 := s.turn(map[string]any{"text": "Read this.", "attachments": []string{doc.Upload.PublicID}}, "needs_attention")
			if r1 := task(t, s.admin, run2, "r1"); r1.Task.Error == nil || r1.Task.Error.Key != "provider_media_refused" {
				t.Fatalf("refused round %s", r1.Raw)
			}
			run3 := s.turn(map[string]any{"text": "Try without it."}, "completed")
			refused := fmt.Sprintf("[attachment doc.pdf application/pdf %d bytes nexus://uploads/%s: refused by this model]", len(pdfBytes), doc.Upload.PublicID)
			if r1 := s.sealed(run3, "r1"); !strings.Contains(r1, refused) {
				t.Errorf("sealed r1 of the next turn %s", r1)
			}
			if b := string(an.Requests()[2].Body); strings.Contains(b, `"type":"document"`) {
				t.Errorf("the refused PDF went out again: %s", b)
			}
		})
	}
}

// TestProviderIDsAcrossProvidersAndRefusal: a mock turn's calls with ids an openai wire cannot
// take (characters outside its alphabet, 60 characters, a repeated id) are sent to the openai
// model as kc_ ids paired with their results, to a fake that refuses what OpenAI would; the sealed
// request keeps the originals. A refused answer leaves its turn's message in the next request but
// no assistant message.
func TestProviderIDsAcrossProvidersAndRefusal(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			refusal := sseReply(dataLine(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": "I can't help with that."}, "finish_reason": nil}}}),
				dataLine(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "content_filter"}}}), "data: [DONE]\n")
			oa := modeltest.NewFake(t, openaiKit.text("ids are fine"), refusal, openaiKit.text("after the refusal"))
			fit := regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
			oa.Check = func(body []byte) string {
				var req struct {
					Messages []struct {
						ToolCalls []struct {
							ID       string `json:"id"`
							Function struct {
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"messages"`
				}
				if err := json.Unmarshal(body, &req); err != nil {
					return "not JSON"
				}
				seen := map[string]bool{}
				for _, m := range req.Messages {
					for _, c := range m.ToolCalls {
						if !fit.MatchString(c.ID) || seen[c.ID] {
							return "invalid tool call id " + c.ID
						}
						seen[c.ID] = true
						if !json.Valid([]byte(c.Function.Arguments)) {
							return "invalid arguments in history"
						}
					}
				}
				return ""
			}
			config := `default_model = "mock/scripted"` + "\n" + `model_provider "mock" { type = "mock" }` + "\n" +
				providerModel("mock/scripted", "", "") + providerBlock("fake-openai", "openai", oa.URL+"/v1", "") + providerModel("fake-openai/m", "", "")
			s := newScenario(t, d, config, nil, func(string) client.ProfileConfiguration { return client.ProfileConfiguration{} })
			long := strings.Repeat("x", 60)
			script := "Go.\n!mock\nround 1\ncall read_file#a.b/c {\"path\":\"a\"}\ncall read_file#" + long + " {\"path\":\"b\"}\n" +
				"call read_file#dup {\"path\":\"c\"}\ncall read_file#dup {\"path\":\n round 2\nsay mock done"
			run1 := s.turn(map[string]any{"text": strings.ReplaceAll(script, "\n round", "\nround")}, "completed")
			if r1 := task(t, s.admin, run1, "r1"); len(r1.Task.Calls) != 4 {
				t.Fatalf("mock calls %s", r1.Raw)
			}
			run2 := s.turn(map[string]any{"text": "Now on openai.", "model": "fake-openai/m"}, "completed")
			b := string(oa.Requests()[0].Body)
			if strings.Count(b, `"id":"kc_`) != 3 || strings.Count(b, `"tool_call_id":"kc_`) != 3 || !strings.Contains(b, `"id":"dup"`) {
				t.Errorf("wire ids %s", b)
			}
			if r1 := s.sealed(run2, "r1"); !strings.Contains(r1, `"id":"a.b/c"`) || !strings.Contains(r1, `"id":"`+long+`"`) {
				t.Errorf("the sealed request lost the original ids: %s", r1)
			}
			run3 := s.turn(map[string]any{"text": "Say something bad.", "model": "fake-openai/m"}, "completed")
			if r1 := task(t, s.admin, run3, "r1"); r1.Task.Finish != "refused" || deref(r1.Task.Output) != "I can't help with that." {
				t.Errorf("refused round %s", r1.Raw)
			}
			s.turn(map[string]any{"text": "Something else.", "model": "fake-openai/m"}, "completed")
			last := string(oa.Requests()[2].Body)
			if !strings.Contains(last, `"content":"Say something bad."`) || strings.Contains(last, "I can't help with that.") {
				t.Errorf("after a refusal: %s", last)
			}
		})
	}
}
