package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// macro is a tool-name macro of a kernel text.
var macro = regexp.MustCompile(`\{\{([a-z][a-z0-9_]*)\}\}`)

// spell renders a template's macros with the given spellings, the wire name otherwise.
func spell(template string, spellings map[string]string) string {
	return macro.ReplaceAllStringFunc(template, func(m string) string {
		wire := strings.Trim(m, "{}")
		if s, ok := spellings[wire]; ok {
			return s
		}
		return wire
	})
}

// TestShippedPackAgainstServedCatalog renders the shipped claude-code pack against the catalog
// this server serves (docs/agent-tools.md#adaptation-packs): the client recuts the served
// template, the kernel takes the aliases on the assembly route and on the profile, renders every
// text with the pack's spellings (Agent's recut naming run_in_background and TaskOutput), and
// the parameters are the ones the model was trained on.
func TestShippedPackAgainstServedCatalog(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		ctx := context.Background()
		c := client.New(f.live(t), f.agent)
		pack, err := client.ShippedPack("claude-code")
		if err != nil {
			t.Fatal(err)
		}
		entries, err := c.PackEntries(ctx, pack)
		if err != nil {
			t.Fatalf("the shipped pack does not fit the served catalog: %v", err)
		}
		cat, err := c.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		templates := client.TemplatesFrom(cat.Tools)
		declaration, err := pack.Apply(nil, templates)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, e := range entries {
			parts = append(parts, string(e))
		}
		if want := "[" + strings.Join(parts, ",") + "]"; string(declaration) != want {
			t.Fatalf("Apply and PackEntries disagree:\n%s\n%s", want, declaration)
		}

		res, err := c.AssembleTools(ctx, &client.AssemblyRequest{Configuration: &client.AssemblyConfiguration{ToolDefinitions: declaration}})
		if err != nil {
			t.Fatal(err)
		}
		set := memberOf(t, string(res.ToolDefinitions))
		if names := callables(t, set); strings.Join(names, ",") != "Agent,Skill,TaskOutput" {
			t.Fatalf("callables %v", names)
		}
		spellings := map[string]string{"delegate_task": "Agent", "skill": "Skill", "wait": "TaskOutput"}
		recut := strings.Replace(templates["nexus.graph.delegate_task"], "or set `wait: true` if your very next step does",
			"or set `run_in_background: false` if your very next step does", 1)
		for i, want := range []struct {
			description, properties, required string
		}{
			{spell(recut, spellings), "prompt,model,lifetime,wake,run_in_background,tools", "prompt"},
			{spell(templates["nexus.skill.load"], spellings), "skill", "skill"},
			{spell(templates["nexus.graph.wait"], spellings), "task_id,run_public_id,timeout", "task_id"},
		} {
			entry := set.Items()[i]
			fn, _ := entry.Get("function")
			name, _ := fn.GetString("name")
			if got, _ := fn.GetString("description"); got != want.description {
				t.Errorf("%s's description:\n%s", name, cmp.Diff(want.description, got))
			}
			params, _ := fn.Get("parameters")
			props, _ := params.Get("properties")
			if got := strings.Join(props.Keys(), ","); got != want.properties {
				t.Errorf("%s's parameters %s, want %s", name, got, want.properties)
			}
			if req, _ := params.Get("required"); string(req.Encode()) != `["`+want.required+`"]` {
				t.Errorf("%s's required %s", name, req.Encode())
			}
			if strings.Contains(string(fn.Encode()), "{{") {
				t.Errorf("%s keeps a macro: %s", name, fn.Encode())
			}
		}
		agentFn, _ := set.Items()[0].Get("function")
		if d, _ := agentFn.GetString("description"); !strings.Contains(d, "Call TaskOutput when a step depends on the\nreport, or set `run_in_background: false` if your very next step does") ||
			!strings.Contains(d, "Put several Agent calls in one message") {
			t.Fatalf("Agent's text does not speak the pack's names:\n%s", d)
		}
		params, _ := agentFn.Get("parameters")
		bg, _ := params.Get("properties")
		bg, _ = bg.Get("run_in_background")
		if def, _ := bg.Get("default"); string(def.Encode()) != "true" {
			t.Fatalf("run_in_background %s: the inverted default is true", bg.Encode())
		}

		// On the profile: stored as the assembly rendered it.
		mode := "rules"
		put, err := c.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
			ToolDefinitions: declaration, ApprovalMode: &mode, ApprovalRules: json.RawMessage(`[{"tool":"skill","verdict":"allow"}]`)}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(put.Configuration.ToolDefinitions, res.ToolDefinitions) {
			t.Fatalf("stored\n%s\nassembled\n%s", put.Configuration.ToolDefinitions, res.ToolDefinitions)
		}
		// Applying the pack again over the stored render replaces its aliases.
		again, err := pack.Apply(put.Configuration.ToolDefinitions, templates)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := jsonwire.Decode(again); err != nil || v.Len() != 3 {
			t.Fatalf("applied over the stored render: %s %v", again, err)
		}
	})
}
