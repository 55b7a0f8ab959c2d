package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// lookupAnnouncement is a tool provider's announcement of one tool, for --function.
const lookupAnnouncement = `{"tools":[{"name":"lookup","description":"Look a word up.",
	"input_schema":{"type":"object","properties":{"word":{"type":"string"}}},
	"effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}}]}`

// line matches one name/value line of a command's output.
func line(t *testing.T, out, name, value string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+` + regexp.QuoteMeta(value) + `$`).MatchString(out) {
		t.Fatalf("no line %q %q in:\n%s", name, value, out)
	}
}

// TestAgentCommands: an agent's steward configures it from the command line, field by field and
// from a file, reads it back as the agent does, and replaces its lost token; the refusals of the
// member doors come back with their words; a conversation the agent answers runs on the profile.
func TestAgentCommands(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()
			mia := map[string]string{EnvToken: strings.TrimSpace(ls.nexus(t, nil, "user", "create", "mia", "-q"))}
			ned := map[string]string{EnvToken: strings.TrimSpace(ls.nexus(t, nil, "user", "create", "ned", "-q"))}
			out := ls.nexus(t, nil, "agent", "create", "helper", "--steward", "mia")
			line(t, out, "steward", "mia")
			line(t, out, "workspace", "default")
			agentTok := tokenLine.FindStringSubmatch(out)[1]
			if out := ls.nexus(t, nil, "agent", "list"); !regexp.MustCompile(`(?m)^helper\s+helper\s+\S+\s+mia\s+`).MatchString(out) {
				t.Fatalf("agent list names the steward by handle:\n%s", out)
			}

			// A tool provider and a runner whose tools the profile names.
			provTok := strings.TrimSpace(ls.nexus(t, nil, "executor", "create", "dictionary", "--kind", "tool_provider", "-q"))
			if _, err := client.New(ls.url, provTok).AnnounceRaw(ctx, json.RawMessage(lookupAnnouncement)); err != nil {
				t.Fatal(err)
			}
			ls.nexus(t, nil, "executor", "create", "laptop", "-q")

			// The steward sets the fields; the output names what the profile holds.
			out = ls.nexus(t, mia, "agent", "configure", "helper", "--model", "mock/scripted", "--instructions", "Be brief.",
				"--kernel-tool", "nexus.memory.read,nexus.memory.write", "--function", "lookup", "--runner", "laptop", "--runner-tool", "disk_usage",
				"--approval-mode", "rules", "--rule", "memory_*=allow", "--rule", "lookup=ask")
			for _, want := range [][2]string{{"agent", "helper"}, {"default model", "mock/scripted"}, {"instructions", "Be brief."},
				{"kernel tools", "nexus.memory.read, nexus.memory.write"}, {"tools", "lookup"}, {"runners", "laptop"},
				{"runner tools", "disk_usage"}, {"approval mode", "rules"},
				{"approval rules", `[{"tool":"memory_*","verdict":"allow"},{"tool":"lookup","verdict":"ask"}]`}} {
				line(t, out, want[0], want[1])
			}
			// The agent reads the same profile at its own door; the function carries the
			// provider's description and schema.
			own, err := client.New(ls.url, agentTok).ProfileConfiguration(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if shown := ls.nexus(t, nil, "agent", "show", "helper", "--json"); shown != string(own.Raw) {
				t.Fatalf("agent show --json:\n%s\nthe agent's own read:\n%s", shown, own.Raw)
			}
			if !strings.Contains(string(own.Configuration.ToolDefinitions), `"description":"Look a word up."`) ||
				!strings.Contains(string(own.Configuration.ToolDefinitions), `"word":{"type":"string"}`) {
				t.Fatalf("the declared function: %s", own.Configuration.ToolDefinitions)
			}

			// A flag replaces its field and keeps the others; an empty value clears it.
			out = ls.nexus(t, mia, "agent", "configure", "helper", "--instructions", "Be thorough.", "--model", "")
			line(t, out, "instructions", "Be thorough.")
			line(t, out, "default model", "-")
			line(t, out, "tools", "lookup")
			line(t, out, "approval mode", "rules")
			// An owner reaches it too, by public id; --reset starts from the empty profile.
			agents, err := client.New(ls.url, ls.admin).Agents(ctx, "default")
			if err != nil || len(agents.Agents) != 1 {
				t.Fatalf("agents: %+v, %v", agents, err)
			}
			out = ls.nexus(t, nil, "agent", "configure", agents.Agents[0].PublicID, "--reset", "--instructions", "Only this.")
			line(t, out, "instructions", "Only this.")
			line(t, out, "kernel tools", "-")
			line(t, out, "runner tools", "all")
			line(t, out, "approval mode", "-")
			// --file sends a whole configuration.
			out = ls.withStdinEnv(t, mia, `{"default_model":"mock/text-only","instructions":"From a file."}`, "agent", "configure", "helper", "--file", "-")
			line(t, out, "default model", "mock/text-only")
			line(t, out, "instructions", "From a file.")

			// The door's refusals, with their words; none changes the profile.
			before := ls.nexus(t, nil, "agent", "show", "helper", "--json")
			ls.refused(t, ned, "not_authorized (403)", "agent", "configure", "helper", "--instructions", "x")
			ls.refused(t, ned, "not_authorized (403)", "agent", "show", "helper")
			ls.refused(t, map[string]string{EnvToken: agentTok}, "not_user (403)", "agent", "show", "helper")
			ls.refused(t, nil, "not_found (404)", "agent", "configure", "ghost", "--instructions", "x")
			ls.refused(t, mia, "validation_failed (422)", "agent", "configure", "helper", "--kernel-tool", "spawn")
			ls.refused(t, mia, "validation_failed (422)", "agent", "configure", "helper", "--approval-mode", "sometimes")
			ls.refused(t, mia, "validation_failed (422)", "agent", "configure", "helper", "--reset", "--kernel-tool", "nexus.memory.read")
			ls.refused(t, mia, `no tool provider of workspace default announces a tool "fetch"`, "agent", "configure", "helper", "--function", "fetch")
			ls.refused(t, mia, `no active runner "desktop"`, "agent", "configure", "helper", "--runner", "desktop")
			for _, c := range []struct {
				want string
				args []string
			}{
				{"give a field to change", []string{"agent", "configure", "helper"}},
				{"--file carries the whole configuration; --model cannot be added to it", []string{"agent", "configure", "helper", "--file", "x.json", "--model", "m/x"}},
				{`--rule takes TOOL=VERDICT (memory_*=allow), not "memory_*"`, []string{"agent", "configure", "helper", "--rule", "memory_*"}},
				{"pass one of --instructions and --instructions-file", []string{"agent", "configure", "helper", "--instructions", "a", "--instructions-file", "b"}},
			} {
				if _, errs := ls.exits(t, mia, exitUsage, c.args...); !strings.Contains(errs, c.want) {
					t.Errorf("nexus %s: stderr %q lacks %q", strings.Join(c.args, " "), errs, c.want)
				}
			}
			if after := ls.nexus(t, nil, "agent", "show", "helper", "--json"); after != before {
				t.Fatalf("refused configures changed the profile:\n%s\n%s", before, after)
			}

			// The profile is what the agent answers with: its instructions reach the model's
			// sealed request.
			ls.nexus(t, mia, "agent", "configure", "helper", "--reset", "--instructions", "Answer in French.")
			conv := strings.TrimSpace(ls.nexus(t, mia, "conversation", "create", "--agent", "helper", "-q"))
			var turn client.Turn
			if err := json.Unmarshal([]byte(ls.nexus(t, mia, "conversation", "send", conv, "Hello", "--json")), &turn); err != nil {
				t.Fatal(err)
			}
			req := ls.nexus(t, mia, "task", "show", turn.RunPublicID, turn.Answer.TaskKey, "--request")
			if !strings.Contains(req, "Answer in French.") {
				t.Fatalf("the sealed request lacks the profile's instructions:\n%s", req)
			}

			// The lost-token case: the steward mints a token and revokes the others.
			first := strings.TrimSpace(ls.nexus(t, mia, "agent", "token", "helper", "--label", "laptop", "-q"))
			me, err := client.New(ls.url, first).Me(ctx)
			if err != nil || me.Principal.Kind != "agent" || me.Principal.Handle != "helper" {
				t.Fatalf("the minted token: %+v, %v", me, err)
			}
			out = ls.nexus(t, nil, "agent", "token", "helper", "--revoke-others", "--expires-in", "720h")
			line(t, out, "revoked", "2 other tokens")
			line(t, out, "label", "minted by admin")
			fresh := tokenLine.FindStringSubmatch(out)[1]
			for _, old := range []string{agentTok, first} {
				if _, err := client.New(ls.url, old).Me(ctx); !isCode(err, "unauthorized") {
					t.Fatalf("a token revoke-others left: %v", err)
				}
			}
			toks, err := client.New(ls.url, fresh).Tokens(ctx)
			if err != nil || len(toks.Tokens) != 1 || toks.Tokens[0].ExpiresAt == nil {
				t.Fatalf("the agent's tokens after the rescue: %+v, %v", toks, err)
			}
			ls.refused(t, ned, "not_authorized (403)", "agent", "token", "helper", "--revoke-others")
			if _, errs := ls.exits(t, mia, exitUsage, "agent", "token", "helper", "--expires-in", "-1h"); !strings.Contains(errs, "--expires-in must be positive") {
				t.Fatalf("a negative lifetime: %s", errs)
			}
			if _, err := client.New(ls.url, fresh).Me(ctx); err != nil {
				t.Fatalf("refused mints revoked the fresh token: %v", err)
			}

			// The messaging policy, by handle.
			out = ls.nexus(t, nil, "policy", "show")
			if !regexp.MustCompile(`(?m)^helper\s+public$`).MatchString(out) || !strings.Contains(out, "(workspace default, lock version 0)") {
				t.Fatalf("policy show:\n%s", out)
			}
			out = ls.nexus(t, nil, "policy", "set", "helper", "private")
			if !regexp.MustCompile(`(?m)^helper\s+private$`).MatchString(out) || !strings.Contains(out, "lock version 1)") {
				t.Fatalf("policy set private:\n%s", out)
			}
			pol, err := client.New(ls.url, ls.admin).MessagingPolicy(ctx, "default")
			if err != nil || len(pol.Policy.Agents) != 1 || pol.Policy.Agents[agents.Agents[0].PublicID] != "private" {
				t.Fatalf("the stored policy: %+v, %v", pol, err)
			}
			if out := ls.nexus(t, nil, "policy", "show", "--json"); !bytes.Equal([]byte(out), pol.Raw) {
				t.Fatalf("policy show --json:\n%s\nthe API's body:\n%s", out, pol.Raw)
			}
			if out := ls.nexus(t, nil, "policy", "set", "helper", "public"); !regexp.MustCompile(`(?m)^helper\s+public$`).MatchString(out) {
				t.Fatalf("policy set public:\n%s", out)
			}
			ls.refused(t, mia, "not_authorized (403)", "policy", "set", "helper", "private")
			ls.refused(t, nil, `no member "ghost"`, "policy", "set", "ghost", "private")
			if _, errs := ls.exits(t, nil, exitUsage, "policy", "set", "helper", "secret"); !strings.Contains(errs, `the policy is public or private, not "secret"`) {
				t.Fatalf("policy set secret: %s", errs)
			}
		})
	}
}
