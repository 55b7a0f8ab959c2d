package declare

import (
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// TestGoldenResolve runs the call table of the golden files
// (testdata/resolve) against the stored result of testdata/resolve/set.json, and checks that the
// caller's input bytes are never modified.
func TestGoldenResolve(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile(readFile(t, "testdata/resolve/set.json"))
	if err != nil {
		t.Fatal(err)
	}
	eachArchive(t, "resolve", func(t *testing.T, g *goldenArchive) {
		name, _ := g.section("name")
		input, _ := g.section("input")
		before := append([]byte(nil), input...)
		res, err := set.ResolveCall(string(name), input)
		if err != nil {
			t.Fatal(err)
		}
		if string(input) != string(before) {
			t.Fatalf("ResolveCall modified its input: %s", input)
		}
		g.want("resolution", resolutionJSON(t, res))
	})
}

// resolutionJSON is the golden form of a resolution; tool_input is written compact so that a
// changed key order (which is not significant) still shows.
func resolutionJSON(t *testing.T, res Resolution) []byte {
	t.Helper()
	in, err := jsonwire.Decode(res.Input)
	if err != nil {
		t.Fatalf("resolved input is not JSON: %v", err)
	}
	ms := []jsonwire.Field{
		jsonwire.M("declared", jsonwire.Bool(res.Declared)),
		jsonwire.M("tool_name", jsonwire.String(res.ToolName)),
		jsonwire.M("tool_input", in),
	}
	if res.Alias != "" {
		ms = append(ms, jsonwire.M("tool_alias", jsonwire.String(res.Alias)))
	}
	return jsonwire.Object(ms...).Encode()
}

// TestGoldenNarrow runs the narrowing rows of the golden files
// (testdata/narrow) on S7.
func TestGoldenNarrow(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	s7, err := c.Compile(readFile(t, "testdata/narrow/S7.json"))
	if err != nil {
		t.Fatal(err)
	}
	stored := string(s7.Bytes())
	eachArchive(t, "narrow", func(t *testing.T, g *goldenArchive) {
		raw, _ := g.section("tool_names")
		var wanted []string
		if err := json.Unmarshal(raw, &wanted); err != nil {
			t.Fatal(err)
		}
		out, err := c.Narrow(s7, wanted)
		if err != nil {
			g.want("refusal", refusalJSON(refusalOf(t, err)))
		} else {
			g.want("set", out.Bytes())
		}
		if string(s7.Bytes()) != stored {
			t.Fatal("narrowing changed the set it narrowed")
		}
	})
}

// goldenRunner is a Runner as the acceptance golden files write it.
type goldenRunner struct {
	PublicID     string                `json:"public_id"`
	DisplayName  string                `json:"display_name"`
	Eligible     bool                  `json:"eligible"`
	Announcement announce.Announcement `json:"announcement"`
}

// goldenProvider is a tool provider as the acceptance golden files write it.
type goldenProvider struct {
	PublicID     string                `json:"public_id"`
	DisplayName  string                `json:"display_name"`
	Announcement announce.Announcement `json:"announcement"`
}

// TestGoldenAccept runs the import and acceptance rows of the golden files
// (testdata/accept): the explicit list is compiled, the import fields parsed, and the acceptance's
// frozen set, environment and skill catalog (or its refusal) compared.
func TestGoldenAccept(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	eachArchive(t, "accept", func(t *testing.T, g *goldenArchive) {
		in := Acceptance{}
		if raw, ok := g.section("explicit"); ok {
			set, err := c.Compile(raw)
			if err != nil {
				t.Fatalf("explicit: %v", err)
			}
			in.Explicit = set
		}
		if raw, ok := g.section("imports"); ok {
			var fields struct {
				KernelTools       json.RawMessage `json:"kernel_tools"`
				RunnerIDs         json.RawMessage `json:"runner_executor_public_ids"`
				RunnerToolNames   json.RawMessage `json:"runner_tool_names"`
				ToolProviderTools json.RawMessage `json:"tool_provider_tools"`
				EagerToolNames    json.RawMessage `json:"eager_tool_names"`
			}
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatal(err)
			}
			im, err := c.ParseImports(ImportSources{KernelTools: fields.KernelTools, RunnerExecutorPublicIDs: fields.RunnerIDs,
				RunnerToolNames: fields.RunnerToolNames, ToolProviderTools: fields.ToolProviderTools, EagerToolNames: fields.EagerToolNames})
			if err != nil {
				g.want("refusal", refusalJSON(refusalOf(t, err)))
				return
			}
			in.Imports = &im
		}
		if raw, ok := g.section("selection"); ok {
			in.Selection = string(raw)
		}
		if raw, ok := g.section("tool_names"); ok {
			if err := json.Unmarshal(raw, &in.ToolNames); err != nil {
				t.Fatal(err)
			}
		}
		if raw, ok := g.section("runners"); ok {
			var rs []goldenRunner
			if err := json.Unmarshal(raw, &rs); err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				in.Runners = append(in.Runners, Runner(r))
			}
		}
		if raw, ok := g.section("kernel_skills"); ok {
			var ks []struct {
				Source      SkillSource `json:"source"`
				Name        string      `json:"name"`
				Description string      `json:"description"`
			}
			if err := json.Unmarshal(raw, &ks); err != nil {
				t.Fatal(err)
			}
			for _, k := range ks {
				in.KernelSkills = append(in.KernelSkills, KernelSkill(k))
			}
		}
		_, withProviders := g.section("providers")
		if raw, ok := g.section("providers"); ok {
			var ps []goldenProvider
			if err := json.Unmarshal(raw, &ps); err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				in.Providers = append(in.Providers, Provider(p))
			}
		}
		if raw, ok := g.section("pins"); ok {
			if err := json.Unmarshal(raw, &in.Pins); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok := g.section("report"); ok {
			in.Report = true
		}
		var explicitBefore []byte
		if in.Explicit != nil {
			explicitBefore = in.Explicit.Bytes()
		}
		frozen, err := c.Accept(in)
		if in.Explicit != nil && string(in.Explicit.Bytes()) != string(explicitBefore) {
			t.Fatal("acceptance changed the explicit set")
		}
		if err != nil {
			g.want("refusal", refusalJSON(refusalOf(t, err)))
			return
		}
		env, _ := frozen.Environment.MarshalJSON()
		cat, _ := frozen.SkillCatalog.MarshalJSON()
		g.want("tool_definitions", frozen.ToolDefinitions.Bytes())
		g.want("environment", env)
		g.want("skill_catalog", cat)
		if withProviders {
			imported, _ := json.Marshal(frozen.Imported)
			g.want("imports", imported)
			if in.Report {
				problems, _ := json.Marshal(frozen.Problems)
				g.want("problems", problems)
				pins, _ := json.Marshal(frozen.Pins)
				g.want("pins", pins)
			}
		}
		// A frozen set is lawful: it re-compiles to itself.
		again, err := c.Compile(frozen.ToolDefinitions.Bytes())
		if err != nil {
			t.Fatalf("the frozen set does not re-compile: %v", err)
		}
		if string(again.Bytes()) != string(frozen.ToolDefinitions.Bytes()) {
			t.Error("re-compiling the frozen set changed it")
		}
	})
}
