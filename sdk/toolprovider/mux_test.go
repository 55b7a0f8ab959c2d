package toolprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

func newMux() *toolprovider.Mux {
	m := toolprovider.NewMux()
	m.Handle(toolprovider.Tool{Name: "b_tool", Description: "B.", InputSchema: json.RawMessage(`{"type":"object"}`), Effect: announce.EffectPure, Timeout: 10 * time.Second},
		func(_ context.Context, c toolprovider.Call) (toolprovider.Result, error) {
			return toolprovider.Result{Text: "b " + c.Scope.TaskKey, Title: fmt.Sprint(c.Claim.Attempt)}, nil
		})
	m.Handle(toolprovider.Tool{Name: "a_tool", Effect: announce.EffectWrite}, func(context.Context, toolprovider.Call) (toolprovider.Result, error) {
		return toolprovider.Result{}, toolprovider.Failed("could not")
	})
	m.Handle(toolprovider.Tool{Name: "plain_error", Effect: announce.EffectWrite}, func(context.Context, toolprovider.Call) (toolprovider.Result, error) {
		return toolprovider.Result{}, errors.New("disk on fire")
	})
	m.Handle(toolprovider.Tool{Name: "memory_read", Effect: memory.ProfileRead}, func(context.Context, toolprovider.Call) (toolprovider.Result, error) {
		return toolprovider.Result{}, memory.ErrNotFound
	})
	m.Documents(announce.Document{Name: "guide", Description: "How."})
	m.Environment(map[string]any{"provider": "test"})
	return m
}

func TestMuxAnnounce(t *testing.T) {
	t.Parallel()
	a, err := newMux().Announce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	desc, ms := "B.", int64(10000)
	want := announce.Announcement{
		Tools: []announce.Tool{
			{Name: "b_tool", Description: &desc, InputSchema: json.RawMessage(`{"type":"object"}`), EffectProfile: announce.Announced(announce.EffectPure), TimeoutMS: &ms},
			{Name: "a_tool", EffectProfile: announce.Announced(announce.EffectWrite)},
			{Name: "plain_error", EffectProfile: announce.Announced(announce.EffectWrite)},
			{Name: "memory_read", EffectProfile: announce.Announced(memory.ProfileRead)},
		},
		Documents:   []announce.Document{{Name: "guide", Description: "How."}},
		Environment: json.RawMessage(`{"provider":"test"}`),
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Error(diff)
	}
	toolprovidertest.CheckAnnouncement(t, newMux())
}

// TestErrorsOverGRPC: each way a Call can fail arrives on the host as its error kind says
// (docs/plugins.md#rules).
func TestErrorsOverGRPC(t *testing.T) {
	t.Parallel()
	for _, over := range []struct {
		name string
		p    func(t *testing.T) toolprovider.Provider
	}{
		{"in process", func(*testing.T) toolprovider.Provider { return newMux() }},
		{"over grpc", func(t *testing.T) toolprovider.Provider { return toolprovidertest.OverGRPC(t, newMux()) }},
	} {
		t.Run(over.name, func(t *testing.T) {
			t.Parallel()
			p := over.p(t)
			res, err := p.Call(t.Context(), toolprovider.Call{Tool: "b_tool", Scope: toolprovider.CallScope{TaskKey: "r2t1"}, Claim: toolprovider.ClaimInfo{Attempt: 2}})
			if err != nil || res.Text != "b r2t1" || res.Title != "2" {
				t.Errorf("b_tool: %+v, %v", res, err)
			}
			_, err = p.Call(t.Context(), toolprovider.Call{Tool: "nope"})
			if !errors.Is(err, toolprovider.ErrUnknownTool) {
				t.Errorf("unknown tool: %v", err)
			}
			_, err = p.Call(t.Context(), toolprovider.Call{Tool: "a_tool"})
			var f *toolprovider.FailedError
			if !errors.As(err, &f) || f.Detail != "could not" {
				t.Errorf("failed: %v", err)
			}
			_, err = p.Call(t.Context(), toolprovider.Call{Tool: "memory_read"})
			if !errors.Is(err, memory.ErrNotFound) {
				t.Errorf("memory sentinel: %v", err)
			}
			if over.name == "over grpc" {
				_, err = p.Call(t.Context(), toolprovider.Call{Tool: "plain_error"})
				var ce *toolprovider.CallError
				if !errors.As(err, &ce) || ce.Kind != "internal" || ce.Message != "disk on fire" {
					t.Errorf("plain error: %#v", err)
				}
				var u *toolprovider.CallError
				_, err = p.Call(t.Context(), toolprovider.Call{Tool: "nope"})
				if !errors.As(err, &u) || u.Kind != "unknown_tool" {
					t.Errorf("unknown tool kind word: %#v", err)
				}
				a, err := p.Announce(t.Context())
				if err != nil || len(a.Tools) != 4 {
					t.Errorf("announce over grpc: %+v, %v", a, err)
				}
				d := p.(plugin.Describer)
				info, _, err := d.Describe(t.Context())
				if err != nil || info.Kind != plugin.KindToolProvider {
					t.Errorf("describe: %+v %v", info, err)
				}
			}
		})
	}
}

func TestCallDecode(t *testing.T) {
	t.Parallel()
	type in struct {
		Text string `json:"text"`
	}
	var v in
	if err := (toolprovider.Call{Input: json.RawMessage(`{"text":"a"}`)}).Decode(&v); err != nil || v.Text != "a" {
		t.Errorf("valid: %v %+v", err, v)
	}
	for _, bad := range []string{`{"text":"a","x":1}`, `{"text":1}`, `{} {}`, ``} {
		if err := (toolprovider.Call{Input: json.RawMessage(bad)}).Decode(&v); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}
