package runs_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/anthropic"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// update rewrites the sealed-request golden files from the current code:
// go test ./core/runs -run TestSealedGolden -update.
var update = flag.Bool("update", false, "rewrite the golden files of testdata/sealed")

// sealedCase is one representative run whose sealed requests are pinned in
// testdata/sealed/<name>.txtar: play drives it and answers, by section name, the run and round
// whose stored request the section holds.
type sealedCase struct {
	name string
	// doc is the archive's comment: what the case pins.
	doc    string
	models *model.Catalog
	// notes gives the conversation's agent a profile with the memory tools; without it the
	// agent has the empty profile.
	notes bool
	play  func(h *harness) []sealedRound
}

// sealedRound names one stored request: the section, the run and the round's task key.
type sealedRound struct{ section, run, key string }

func rounds(run string, keys ...string) []sealedRound {
	out := make([]sealedRound, len(keys))
	for i, k := range keys {
		out[i] = sealedRound{section: k, run: run, key: k}
	}
	return out
}

// sealedCases are the runs the golden test plays: a first round, a continuation, a step reading
// results, attachments, the skills block, deferred tools, aliases, the history budget and the
// placeholder tools of a provider that refuses calls without definitions.
func sealedCases(t *testing.T) []sealedCase {
	small := catalogOf(t, model.Config{Providers: []model.ProviderConfig{{Name: "mock", Type: model.ProviderTypeMock}},
		Models: []model.Model{{Ref: "mock/small", Capabilities: model.Capabilities{Tools: true, ContextWindow: ptr(int64(2700)), MaxOutputTokens: ptr(int64(500))}}}}, nil)
	// The anthropic type's adapter is the mock reporting the anthropic adapter's capabilities: the
	// request is assembled for what that wire needs, the answer is the script's.
	anthropicMock := map[string]model.Adapter{model.ProviderTypeAnthropic: func(p model.ProviderConfig, _ []model.Model) (model.Provider, error) {
		return reporting{Provider: model.NewMock(p.Name), caps: new(anthropic.Provider).Capabilities()}, nil
	}}
	an := catalogOf(t, model.Config{Providers: []model.ProviderConfig{{Name: "an", Type: model.ProviderTypeAnthropic, APIKey: model.NewSecret("", "k")}},
		Models: []model.Model{{Ref: "an/claude", ID: "claude-test", Capabilities: model.Capabilities{Tools: true, ContextWindow: ptr(int64(200000)), MaxOutputTokens: ptr(int64(4096))}}}}, anthropicMock)
	return []sealedCase{
		{name: "first_round", doc: "A model step's first round: the system entry from its instructions, the opening user entry, the declared tools offered.",
			play: func(h *harness) []sealedRound {
				run := h.create(`{"steps":[{"model":{"model":"mock/scripted","instructions":"You keep the plan.","prompt":"Note the plan.\n!mock\nround 1\nsay noted",` + memoryTools + `}}],"approval_mode":"bypass"}`).Run.PublicID
				h.drain()
				return rounds(run, "s1-model-1")
			}},
		{name: "continuation", doc: "Continuations: each request is the previous one plus its answer and the paired results, a refused call's <tool_use_error> among them.",
			play: func(h *harness) []sealedRound {
				script := "Keep notes.\n!mock\nround 1\ncall memory_write {\"path\":\"workspace/plan.md\",\"content\":\"Ship on Friday.\"}\ncall no_such_tool {}\nround 2\ncall memory_read {\"path\":\"workspace/plan.md\"}\nround 3\nsay The plan: {{last_result}}"
				run := h.create(modelStep(script, memoryTools)).Run.PublicID
				h.drain()
				return rounds(run, "s1-model-1", "r2", "r3")
			}},
		{name: "results", doc: "A model step that reads another step's result: its <task_result> before the prompt.",
			play: func(h *harness) []sealedRound {
				run := h.create(`{"steps":[{"model":{"key":"draft","model":"mock/scripted","prompt":"Draft.\n!mock\nround 1\nsay A first draft."}},` +
					`{"model":{"key":"review","model":"mock/scripted","prompt":"Review the draft.\n!mock\nround 1\nsay Reviewed.","results":["draft"]}}],"approval_mode":"bypass"}`).Run.PublicID
				h.drain()
				return rounds(run, "review")
			}},
		{name: "attachments", doc: "A step's uploads: an image as an attachment part for a vision model and as an index line for a text-only one; a text file as an index line for both.",
			play: func(h *harness) []sealedRound {
				img := h.upload("page.png", pngBytes)
				txt := h.upload("notes.txt", []byte("plain words"))
				var out []sealedRound
				for _, m := range []string{"mock/scripted", "mock/text-only"} {
					run := h.create(`{"steps":[{"model":{"model":"` + m + `","prompt":"Look.\n!mock\nround 1\nsay seen","attachments":["` + img + `","` + txt + `"]}}],"approval_mode":"bypass"}`).Run.PublicID
					h.drain()
					out = append(out, sealedRound{section: strings.TrimPrefix(m, "mock/"), run: run, key: "s1-model-1"})
				}
				return out
			}},
		{name: "skills_block", doc: "The skills block before the prompt, from the frozen kernel skill catalog (the workspace's document wins a name).",
			play: func(h *harness) []sealedRound {
				h.writeSkill("workspace/skills/release-notes", "# Notes\nWrite them short.\n", "How we write release notes.")
				h.writeSkill("user/skills/release-notes", "# Mine\n", "My own release notes.")
				h.writeSkill("user/skills/commit-style", "# Commits\n", "How this team\n  writes commit messages.")
				script := "Follow the skills.\n!mock\nround 1\ncall skill {\"name\":\"release-notes\"}\nround 2\nsay done"
				run := h.create(modelStep(script, `"kernel_tools":["nexus.skill.load","nexus.memory.read"]`)).Run.PublicID
				h.drain()
				return rounds(run, "s1-model-1", "r2")
			}},
		{name: "deferred_tools", doc: "Deferred entries held back behind tool_search and tool_call, then a search and a call through tool_call.",
			play: func(h *harness) []sealedRound {
				script := "Find the reader.\n!mock\nround 1\ncall tool_search {\"query\":\"memory_read\"}\nround 2\ncall tool_call {\"name\":\"memory_read\",\"input\":{\"path\":\"workspace/none.md\"}}\nround 3\nsay done"
				tools := `"tools":[` + catalogEntry(h, "nexus.memory.read", true) + `,` + catalogEntry(h, "nexus.memory.ls", true) + `],"kernel_tools":["nexus.tools.search","nexus.tools.call"]`
				run := h.create(modelStep(script, tools)).Run.PublicID
				h.drain()
				return rounds(run, "s1-model-1", "r2", "r3")
			}},
		{name: "aliases", doc: "Aliases: a kernel tool under the agent's own name and parameters, the kernel's texts rendered with its spellings, and a call under the alias paired under it.",
			play: func(h *harness) []sealedRound {
				tools := `"tools":[{"type":"function","function":{"name":"Read"},"canonical":"nexus.memory.read","params":{"file":{"maps_to":"path"}}},` +
					`{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task","params":{"run_in_background":{"maps_to":"wait","invert":true,"description":"true (the default): the job runs in the background. false: this turn waits for it."}}}]`
				script := "Read it.\n!mock\nround 1\ncall Read {\"file\":\"workspace/none.md\"}\nround 2\nsay done"
				run := h.create(modelStep(script, tools)).Run.PublicID
				h.drain()
				return rounds(run, "s1-model-1", "r2")
			}},
		{name: "history_budget", doc: "A conversation's history: earlier turns oldest first, and the oldest whole turns dropped while the request exceeds the window less the output.",
			models: small,
			play: func(h *harness) []sealedRound {
				conv := h.agentConversation()
				var out []sealedRound
				for i := 0; i < 4; i++ {
					p := h.post(conv, fmt.Sprintf("turn %d %s", i, strings.Repeat("w", 1500)), "")
					h.drain()
					out = append(out, sealedRound{section: fmt.Sprintf("turn%d/r1", i+1), run: p.Run.PublicID, key: "r1"})
				}
				return out
			}},
		{name: "placeholder_tools", doc: "A provider that refuses tool blocks without definitions: a turn offered no tools replays the earlier calls with one placeholder definition per name and tool_choice none.",
			models: an, notes: true,
			play: func(h *harness) []sealedRound {
				conv := h.agentConversation()
				first := h.post(conv, "Write it down.\n!mock\nround 1\ncall memory_write {\"path\":\"conversation/a.md\",\"content\":\"a\"}\ncall memory_ls {}\nround 2\nsay written", `"model":"an/claude"`)
				h.drain()
				second := h.post(conv, "And now?", `"model":"an/claude","tool_names":[]`)
				h.drain()
				return []sealedRound{{section: "turn1/r2", run: first.Run.PublicID, key: "r2"}, {section: "turn2/r1", run: second.Run.PublicID, key: "r1"}}
			}},
	}
}

// TestSealedGolden pins the request the engine assembles and seals for each round of
// representative runs (docs/development.md#how-the-kernel-runs-work), one archive per case in
// testdata/sealed: the stored bytes, indented, with public ids numbered in order of first
// appearance. Both stores must seal the same bytes.
func TestSealedGolden(t *testing.T) {
	t.Parallel()
	cases := sealedCases(t)
	names := map[string]bool{}
	for _, c := range cases {
		names[c.name+".txtar"] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "sealed", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !names[filepath.Base(f)] {
			t.Errorf("%s has no case", f)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "sealed", c.name+".txtar")
			storetest.Each(t, func(t *testing.T, s *store.Store) {
				o := harnessOptions{models: c.models}
				if c.notes {
					o.profile = memoryProfile
				}
				h := newHarness(t, s, o)
				got := &txtar.Archive{Comment: []byte(c.doc + "\n")}
				ids := idNumbers{}
				for _, r := range c.play(h) {
					raw, err := h.conv.ReadRequest(h.ctx, h.actor, r.run, r.key)
					if err != nil {
						t.Fatalf("%s: %v", r.section, err)
					}
					var compact bytes.Buffer
					if err := json.Compact(&compact, raw); err != nil || !bytes.Equal(compact.Bytes(), raw) {
						t.Fatalf("%s: the stored request is not compact JSON: %v", r.section, err)
					}
					var pretty bytes.Buffer
					if err := json.Indent(&pretty, raw, "", "  "); err != nil {
						t.Fatal(err)
					}
					got.Files = append(got.Files, txtar.File{Name: r.section, Data: append(ids.replace(pretty.Bytes()), '\n')})
				}
				compareArchive(t, path, txtar.Format(got))
			})
		})
	}
}

// compareArchive checks got against the golden archive, or writes it under -update (each
// store's subtest writes the same bytes, which the next run without -update holds them to).
func compareArchive(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./core/runs -run TestSealedGolden -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; run with -update to accept a deliberate change):\n%s", path, diff)
	}
}

// idNumbers replaces public ids (UUIDs) with <id-N>, numbered in order of first appearance
// across a case's sections, so that a golden file names the same id the same way throughout.
type idNumbers map[string]int

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func (n idNumbers) replace(b []byte) []byte {
	return uuidPattern.ReplaceAllFunc(b, func(id []byte) []byte {
		k, ok := n[string(id)]
		if !ok {
			k = len(n) + 1
			n[string(id)] = k
		}
		return []byte(fmt.Sprintf("<id-%d>", k))
	})
}

func catalogOf(t *testing.T, cfg model.Config, adapters map[string]model.Adapter) *model.Catalog {
	t.Helper()
	c, err := model.NewCatalogWith(&cfg, adapters)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// catalogEntry is a kernel tool's catalog definition, as an agent declares it byte for byte,
// deferred when asked.
func catalogEntry(h *harness, canonical string, deferred bool) string {
	h.t.Helper()
	e, ok := registry.New().Resolve(canonical)
	if !ok {
		h.t.Fatalf("no catalog entry %s", canonical)
	}
	def, err := registry.Definition(e, registry.PlainSpelling)
	if err != nil {
		h.t.Fatal(err)
	}
	if deferred {
		return strings.TrimSuffix(string(def), "}") + `,"defer_loading":true}`
	}
	return string(def)
}

// agentConversation adds an agent and a conversation it answers.
func (h *harness) agentConversation() string {
	h.t.Helper()
	a := h.newAgent("bot", "Bot")
	c, err := h.conv.CreateConversation(h.ctx, h.actor, conversationBody(`{"answering_agent_public_id":"`+a.PublicID+`","title":"Notes"}`))
	if err != nil {
		h.t.Fatal(err)
	}
	return c.PublicID
}

// reporting is a provider that reports other capabilities than its own.
type reporting struct {
	model.Provider
	caps model.ProviderCapabilities
}

func (r reporting) Capabilities() model.ProviderCapabilities { return r.caps }
