package modeltest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
)

// LiveConfig names the environment variables of one provider type's live tests.
type LiveConfig struct {
	Type           string
	BaseURL, Key   string // variable names
	Model          string
	MaxTokensField string // openai only; "" when the type has none
}

// Live runs the wire checks against a real server when its variables are set (make test-live;
// CI sets none, and the tests then say what they need): a plain prompt streamed and not ends stop
// or length with usage, a call to a declared get_time tool gets its result back and a second
// answer, and an unknown model id is refused. Keys are read from the environment only and never
// printed.
func Live(t *testing.T, cfg LiveConfig, adapter AdapterFor) {
	base := os.Getenv(cfg.BaseURL)
	if base == "" {
		t.Skipf("live tests against a real %s server: set %s (and %s, %s)", cfg.Type, cfg.BaseURL, cfg.Model, cfg.Key)
	}
	id := os.Getenv(cfg.Model)
	if id == "" {
		t.Fatalf("%s is set but %s is not", cfg.BaseURL, cfg.Model)
	}
	build := func(stream bool, modelID string) (model.Provider, *model.Request) {
		p := model.ProviderConfig{Name: "live", Type: cfg.Type, BaseURL: base, Stream: &stream}
		if k := os.Getenv(cfg.Key); k != "" {
			p.APIKey = model.NewSecret(cfg.Key, k)
		}
		if cfg.MaxTokensField != "" {
			p.MaxTokensField = os.Getenv(cfg.MaxTokensField)
		}
		size := func(v int64) *int64 { return &v }
		m := model.Model{Ref: "live/m", Provider: "live", Name: "m", ID: modelID, ProviderType: cfg.Type,
			Capabilities: model.Capabilities{Tools: true, ContextWindow: size(32768), MaxOutputTokens: size(512)}}
		inst, err := adapter(hclog.NewNullLogger())(p.Resolved(), []model.Model{m})
		if err != nil {
			t.Fatal(err)
		}
		req := &model.Request{Ref: m.Ref, Model: modelID, MaxOutputTokens: 512,
			Entries: []model.Entry{{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: "Say hello in one word."}}}}}
		return model.WithRetry(inst, nil, nil), req
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, stream := range []bool{true, false} {
		p, req := build(stream, id)
		resp, err := p.Complete(ctx, req)
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if (resp.Finish != model.FinishStop && resp.Finish != model.FinishLength) || resp.Usage.InputTokens == 0 {
			t.Errorf("stream=%v: finish %s usage %+v", stream, resp.Finish, resp.Usage)
		}
	}
	p, req := build(true, id)
	req.Entries[0].Content[0].Text = "What time is it? Use the get_time tool."
	req.Tools = []model.ToolSchema{{Name: "get_time", Description: "The current time.", Parameters: []byte(`{"type":"object","properties":{}}`)}}
	req.ToolChoice = "auto"
	resp, err := p.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) > 0 {
		c := resp.ToolCalls[0]
		req.Entries = append(req.Entries, model.Entry{Role: model.RoleAssistant, Content: resp.AnswerContent(), ToolCalls: resp.ToolCalls},
			model.Entry{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: []model.Part{{Type: model.PartText, Text: "12:00"}}})
		for _, extra := range resp.ToolCalls[1:] {
			req.Entries = append(req.Entries, model.Entry{Role: model.RoleTool, ToolCallID: extra.ID, Name: extra.Name, Content: []model.Part{}})
		}
		if _, err := p.Complete(ctx, req); err != nil {
			t.Fatalf("the answer to the tool result: %v", err)
		}
	}
	p, req = build(true, "nexus-no-such-model")
	_, err = p.Complete(ctx, req)
	var me *model.Error
	if !errors.As(err, &me) || (me.Key != model.KeyProviderModelUnavailable && me.Key != model.KeyProviderHTTPError) {
		t.Errorf("an unknown model: %v", err)
	}
}
