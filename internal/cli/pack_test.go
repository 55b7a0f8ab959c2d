package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// recutCatalog serves the server's catalog with delegate_task's template re-cut where the
// claude-code pack anchors, as a server of another release would, and passes every other
// request through to the server.
func recutCatalog(t *testing.T, server string) string {
	t.Helper()
	target, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/agent_api/v1/tools" {
			proxy.ServeHTTP(w, r)
			return
		}
		cat, err := client.New(server, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")).Tools(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for i, tool := range cat.Tools {
			if tool.CanonicalName == "nexus.graph.delegate_task" {
				cat.Tools[i].Template = strings.Replace(tool.Template, "or set `wait: true` if your very next step does", "or set `wait` to true when your next step needs it", 1)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"tools": cat.Tools})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAgentConfigurePack: `nexus agent configure --pack` gives an agent the spellings of a shipped
// adaptation pack, rendered against the server's catalog, beside the tools it declares and in
// place of the pack's names on a second application; an unknown pack is a usage error, and a
// server whose template the pack's recut no longer fits fails it loudly and changes nothing.
func TestAgentConfigurePack(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()
			mia := map[string]string{EnvToken: strings.TrimSpace(ls.nexus(t, nil, "user", "create", "mia", "-q"))}
			out := ls.nexus(t, nil, "agent", "create", "helper", "--steward", "mia")
			agentTok := tokenLine.FindStringSubmatch(out)[1]

			// A declared function tool, then the pack beside it.
			ls.withStdinEnv(t, mia, `[{"type":"function","name":"notes","description":"Keep a note.","parameters":{"type":"object"}}]`,
				"agent", "configure", "helper", "--tools", "-", "--approval-mode", "bypass")
			out = ls.nexus(t, mia, "agent", "configure", "helper", "--pack", "claude-code")
			line(t, out, "tools", "Agent, Skill, TaskOutput, notes")
			line(t, out, "approval mode", "bypass")

			// The agent reads its aliases rendered with the pack's names.
			own, err := client.New(ls.url, agentTok).ProfileConfiguration(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var set []struct {
				Function struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
				Canonical string `json:"canonical"`
			}
			if err := json.Unmarshal(own.Configuration.ToolDefinitions, &set); err != nil || len(set) != 4 {
				t.Fatalf("%s %v", own.Configuration.ToolDefinitions, err)
			}
			if a := set[0].Function; set[0].Canonical != "nexus.graph.delegate_task" ||
				!strings.Contains(a.Description, "Call TaskOutput when a step depends on the\nreport, or set `run_in_background: false` if your very next step does") ||
				!strings.Contains(string(a.Parameters), `"run_in_background":{"type":"boolean","default":true`) {
				t.Fatalf("Agent: %+v", set[0])
			}
			if s := set[1]; s.Canonical != "nexus.skill.load" || !strings.Contains(string(s.Function.Parameters), `"required":["skill"]`) {
				t.Fatalf("Skill: %+v", s)
			}
			if w := set[2]; w.Canonical != "nexus.graph.wait" || !strings.Contains(string(w.Function.Parameters), `"task_id":`) ||
				!strings.Contains(string(w.Function.Parameters), `"timeout":`) {
				t.Fatalf("TaskOutput: %+v", w)
			}

			// A second application replaces the pack's entries instead of doubling them.
			applied := ls.nexus(t, nil, "agent", "show", "helper", "--json")
			out = ls.nexus(t, mia, "agent", "configure", "helper", "--pack", "claude-code")
			line(t, out, "tools", "Agent, Skill, TaskOutput, notes")
			if again := ls.nexus(t, nil, "agent", "show", "helper", "--json"); again != applied {
				t.Fatalf("applying the pack again changed the profile:\n%s\n%s", applied, again)
			}
			// With --reset the pack is the whole declaration.
			out = ls.nexus(t, mia, "agent", "configure", "helper", "--reset", "--pack", "claude-code", "--approval-mode", "bypass")
			line(t, out, "tools", "Agent, Skill, TaskOutput")
			line(t, out, "approval mode", "bypass")

			// The model calls Agent as it was trained to; the call runs as delegate_task, its
			// input mapped (run_in_background false is wait true), the alias beside it.
			conv := strings.TrimSpace(ls.nexus(t, mia, "conversation", "create", "--agent", "helper", "-q"))
			script := "!mock\nround 1\n" + `call Agent {"prompt": "!mock\nround 1\nsay report ready", "run_in_background": false}` +
				"\nround 2\nsay helper said: {{last_result}}"
			var turn client.Turn
			if err := json.Unmarshal([]byte(ls.nexus(t, mia, "conversation", "send", conv, script, "--json")), &turn); err != nil {
				t.Fatal(err)
			}
			if turn.Answer == nil || !strings.Contains(turn.Answer.Text, "helper said:") || !strings.Contains(turn.Answer.Text, "report ready") {
				t.Fatalf("turn %+v", turn)
			}
			var call struct {
				Task struct {
					ToolName  string          `json:"tool_name"`
					ToolAlias string          `json:"tool_alias"`
					ToolInput json.RawMessage `json:"tool_input"`
					Status    string          `json:"status"`
				} `json:"task"`
			}
			if err := json.Unmarshal([]byte(ls.nexus(t, mia, "task", "show", turn.RunPublicID, "r2t0", "--json")), &call); err != nil {
				t.Fatal(err)
			}
			if c := call.Task; c.ToolName != "delegate_task" || c.ToolAlias != "Agent" || c.Status != "completed" ||
				string(c.ToolInput) != `{"prompt":"!mock\nround 1\nsay report ready","wait":true}` {
				t.Fatalf("the Agent call %+v %s", c, c.ToolInput)
			}

			// Refusals change nothing.
			before := ls.nexus(t, nil, "agent", "show", "helper", "--json")
			for _, c := range []struct {
				want string
				args []string
			}{
				{`--pack: sdk: no such adaptation pack: "nope" (shipped: claude-code)`, []string{"agent", "configure", "helper", "--pack", "nope"}},
				{"--file carries the whole configuration; --pack cannot be added to it", []string{"agent", "configure", "helper", "--file", "x.json", "--pack", "claude-code"}},
			} {
				if _, errs := ls.exits(t, mia, exitUsage, c.args...); !strings.Contains(errs, c.want) {
					t.Errorf("nexus %s: stderr %q lacks %q", strings.Join(c.args, " "), errs, c.want)
				}
			}
			// Against a server whose template was re-cut, the pack fails loudly and nothing is sent.
			moved := map[string]string{EnvToken: mia[EnvToken], EnvAddr: recutCatalog(t, ls.url)}
			ls.refused(t, moved, "nexus: adaptation pack \"claude-code\": sdk: alias \"Agent\": recut anchor not found in the template of "+
				"nexus.graph.delegate_task; re-cut the entry (anchor begins \"or set `wait: true` if your very next step does\"); "+
				"the profile is unchanged: a pack ships with the nexus command, so use the command of the server's release",
				"agent", "configure", "helper", "--reset", "--pack", "claude-code", "--instructions", "lost")
			// The proxy passes the rest through: the same command without --pack reaches the server.
			ls.nexus(t, moved, "agent", "show", "helper")
			if after := ls.nexus(t, nil, "agent", "show", "helper", "--json"); after != before {
				t.Fatalf("a refused --pack changed the profile:\n%s\n%s", before, after)
			}
			if !bytes.Contains([]byte(before), []byte(`"name":"Agent"`)) {
				t.Fatalf("profile %s", before)
			}
		})
	}
}
