package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestProfileAndAssemblyRequests: method, path and body of the three calls; a nil
// RunnerToolNames is sent as null (all tools), an empty one as [] (none), and the selector key
// is always sent.
func TestProfileAndAssemblyRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mode := "rules"
	runner := "01900000-0000-7000-8000-000000000051"
	cases := []struct {
		name string
		call func(c *Client) error
		want recorded
	}{
		{"get profile", func(c *Client) error { _, err := c.ProfileConfiguration(ctx); return err },
			recorded{Method: "GET", Path: "/agent_api/v1/profile/configuration"}},
		{"put profile", func(c *Client) error {
			_, err := c.PutProfileConfiguration(ctx, &ProfileConfigurationRequest{Configuration: ProfileConfiguration{
				ToolDefinitions: json.RawMessage(`[{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task"}]`),
				KernelTools:     []string{"nexus.graph.wait"},
				ApprovalMode:    &mode,
			}})
			return err
		}, recorded{Method: "PUT", Path: "/agent_api/v1/profile/configuration", Body: map[string]any{"configuration": map[string]any{
			"tool_definitions":           []any{map[string]any{"type": "function", "function": map[string]any{"name": "Agent"}, "canonical": "nexus.graph.delegate_task"}},
			"kernel_tools":               []any{"nexus.graph.wait"},
			"runner_executor_public_ids": nil,
			"runner_tool_names":          nil,
			"approval_mode":              "rules",
			"approval_rules":             nil,
			"default_model":              nil,
			"instructions":               nil,
		}}}},
		{"assembly of the profile", func(c *Client) error { _, err := c.AssembleTools(ctx, &AssemblyRequest{}); return err },
			recorded{Method: "POST", Path: "/agent_api/v1/tools/assembly", Body: map[string]any{"default_runner_executor_public_id": nil}}},
		{"assembly of a proposal", func(c *Client) error {
			_, err := c.AssembleTools(ctx, &AssemblyRequest{DefaultRunnerExecutorPublicID: &runner, Configuration: &AssemblyConfiguration{
				RunnerExecutorPublicIDs: []string{runner}, RunnerToolNames: []string{},
			}})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/tools/assembly", Body: map[string]any{
			"default_runner_executor_public_id": runner,
			"configuration":                     map[string]any{"tool_definitions": nil, "kernel_tools": nil, "runner_executor_public_ids": []any{runner}, "runner_tool_names": []any{}},
		}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, seen := fakeServer(t, http.StatusOK, `{}`)
			if err := tc.call(c); err != nil {
				t.Fatal(err)
			}
			tc.want.Auth = "Bearer nxm_tok"
			if d := cmp.Diff([]recorded{tc.want}, *seen); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
		})
	}
}

// TestAssemblyResponseKeepsBytes: the assembled set is kept as the server's bytes, and a
// refusal comes back as *Error with its extra fields.
func TestAssemblyResponseKeepsBytes(t *testing.T) {
	t.Parallel()
	body := `{"tool_definitions":[{"type":"function","name":"grep","description":"<b>"}],"environment":{"default_runner_executor_public_id":null,"executors":[],"runner_candidates":[{"runner_executor_public_id":"r","display_name":"box","environment":{"os":"linux"}}]}}`
	c, _ := fakeServer(t, http.StatusOK, body)
	out, err := c.AssembleTools(context.Background(), &AssemblyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.ToolDefinitions) != `[{"type":"function","name":"grep","description":"<b>"}]` || string(out.Raw) != body {
		t.Fatalf("tool_definitions %s", out.ToolDefinitions)
	}
	if out.Environment.DefaultRunnerExecutorPublicID != nil || len(out.Environment.RunnerCandidates) != 1 ||
		string(out.Environment.RunnerCandidates[0].Environment) != `{"os":"linux"}` {
		t.Fatalf("environment %+v", out.Environment)
	}
	c, _ = fakeServer(t, http.StatusUnprocessableEntity, `{"error":{"code":"tool_not_served","message":"m","callable":"remote_read","runner_executor_public_id":"r","tool_name":"read"}}`)
	_, err = c.AssembleTools(context.Background(), &AssemblyRequest{})
	var e *Error
	if !errors.As(err, &e) || e.Code != "tool_not_served" || string(e.Extra["callable"]) != `"remote_read"` {
		t.Fatalf("err = %v", err)
	}
}
