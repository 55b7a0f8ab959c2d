package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestProfileDoorsWired: the server serves the profile and assembly doors with the deployment's
// kernel registry and models catalog.
func TestProfileDoorsWired(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			srv, s := openServer(t, d, Options{})
			hs := httptest.NewServer(srv.Handler())
			defer hs.Close()
			tok, err := os.ReadFile(filepath.Join(s.DataDir, "admin.token"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			admin := client.New(hs.URL, strings.TrimSpace(string(tok)))
			created, err := admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "builder", DisplayName: "Builder"})
			if err != nil {
				t.Fatal(err)
			}
			agent := client.New(hs.URL, created.Token)
			mode, model := "ask", "mock/text-only"
			if _, err := agent.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
				KernelTools: []string{"nexus.graph.wait"}, ApprovalMode: &mode, DefaultModel: &model}}); err != nil {
				t.Fatal(err)
			}
			unknown := "mock/nope"
			_, err = agent.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{DefaultModel: &unknown}})
			var e *client.Error
			if !errors.As(err, &e) || e.Code != "validation_failed" || string(e.Extra["word"]) != `"unknown_model"` {
				t.Fatalf("unknown model: %v", err)
			}
			// A kernel import freezes the catalog's definition, byte for byte.
			cat, err := agent.Tools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var wait json.RawMessage
			for _, tool := range cat.Tools {
				if tool.CanonicalName == "nexus.graph.wait" {
					wait = tool.Definition
				}
			}
			res, err := agent.AssembleTools(ctx, &client.AssemblyRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.ToolDefinitions) != "["+string(wait)+"]" {
				t.Fatalf("assembled %s\nwant [%s]", res.ToolDefinitions, wait)
			}
		})
	}
}
