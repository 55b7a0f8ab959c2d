package declare

import (
	"encoding/json"
	"sort"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Environment is the frozen Runner context (docs/agent-tools.md#declaring-tools), the shape the
// assembly route answers and runners_list reads.
type Environment struct {
	// DefaultRunnerExecutorPublicID is the selection, lowercase; nil for none.
	DefaultRunnerExecutorPublicID *string `json:"default_runner_executor_public_id"`
	// Executors are the selected Runner, then every Runner a route of the final set names,
	// in set order, without repeats.
	Executors []RunnerRow `json:"executors"`
	// RunnerCandidates are the eligible candidates, in declared order.
	RunnerCandidates []RunnerRow `json:"runner_candidates"`
}

// RunnerRow is one Runner of an environment.
type RunnerRow struct {
	RunnerExecutorPublicID string `json:"runner_executor_public_id"`
	DisplayName            string `json:"display_name"`
	// Environment is the Runner's announced environment object ({} when none).
	Environment json.RawMessage `json:"environment"`
}

// Value is the environment as an ordered JSON value.
func (env Environment) Value() jsonwire.Value {
	def := jsonwire.Null()
	if env.DefaultRunnerExecutorPublicID != nil {
		def = jsonwire.String(*env.DefaultRunnerExecutorPublicID)
	}
	return jsonwire.Object(
		jsonwire.M("default_runner_executor_public_id", def),
		jsonwire.M("executors", rowsValue(env.Executors)),
		jsonwire.M("runner_candidates", rowsValue(env.RunnerCandidates)),
	)
}

// MarshalJSON writes the compact, order-preserving encoding.
func (env Environment) MarshalJSON() ([]byte, error) { return env.Value().Encode(), nil }

func rowsValue(rows []RunnerRow) jsonwire.Value {
	items := make([]jsonwire.Value, len(rows))
	for i, r := range rows {
		facts, err := jsonwire.Decode(r.Environment)
		if err != nil || !facts.IsObject() {
			facts = jsonwire.Object()
		}
		items[i] = jsonwire.Object(
			jsonwire.M("runner_executor_public_id", jsonwire.String(r.RunnerExecutorPublicID)),
			jsonwire.M("display_name", jsonwire.String(r.DisplayName)),
			jsonwire.M("environment", facts),
		)
	}
	return jsonwire.Array(items...)
}

func rowOf(r *Runner) RunnerRow {
	env := r.Announcement.Environment
	if len(env) == 0 {
		env = json.RawMessage(`{}`)
	}
	return RunnerRow{RunnerExecutorPublicID: lowerID(r.PublicID), DisplayName: r.DisplayName, Environment: env}
}

func environment(selection string, selected *Runner, candidates []string, set *Set, runners map[string]*Runner) Environment {
	env := Environment{Executors: []RunnerRow{}, RunnerCandidates: []RunnerRow{}}
	listed := map[string]bool{}
	if selection != "" {
		id := lowerID(selection)
		env.DefaultRunnerExecutorPublicID = &id
		env.Executors = append(env.Executors, rowOf(selected))
		listed[id] = true
	}
	for i := range set.entries {
		rt := set.entries[i].route
		if rt == nil {
			continue
		}
		id := lowerID(rt.RunnerID)
		if r := runners[id]; r != nil && !listed[id] {
			env.Executors = append(env.Executors, rowOf(r))
			listed[id] = true
		}
	}
	for _, c := range candidates {
		if r := runners[lowerID(c)]; r != nil && r.Eligible {
			env.RunnerCandidates = append(env.RunnerCandidates, rowOf(r))
		}
	}
	return env
}

// SkillSource is where a frozen skill is read from.
type SkillSource string

const (
	SourceRunner    SkillSource = "runner"
	SourceWorkspace SkillSource = "workspace"
	SourceUser      SkillSource = "user"
)

// KernelSkill is one kernel skill document (workspace/skills/<name> or user/skills/<name>).
type KernelSkill struct {
	Source      SkillSource
	Name        string
	Description string
}

// SkillEntry is one skill of a frozen catalog.
type SkillEntry struct {
	Callable    string      `json:"callable"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Source      SkillSource `json:"source"`
	// RunnerExecutorPublicID is the serving Runner, lowercase; only for source runner.
	RunnerExecutorPublicID string `json:"runner_executor_public_id,omitempty"`
}

// SkillCatalog is the frozen skill catalog: ordered by callable (set order), then skill name.
type SkillCatalog []SkillEntry

// Value is the catalog as an ordered JSON value.
func (sc SkillCatalog) Value() jsonwire.Value {
	items := make([]jsonwire.Value, len(sc))
	for i, e := range sc {
		ms := []jsonwire.Field{
			jsonwire.M("callable", jsonwire.String(e.Callable)),
			jsonwire.M("name", jsonwire.String(e.Name)),
			jsonwire.M("description", jsonwire.String(e.Description)),
			jsonwire.M("source", jsonwire.String(string(e.Source))),
		}
		if e.Source == SourceRunner {
			ms = append(ms, jsonwire.M("runner_executor_public_id", jsonwire.String(e.RunnerExecutorPublicID)))
		}
		items[i] = jsonwire.Object(ms...)
	}
	return jsonwire.Array(items...)
}

// MarshalJSON writes the compact, order-preserving encoding; an empty catalog is [].
func (sc SkillCatalog) MarshalJSON() ([]byte, error) { return sc.Value().Encode(), nil }

// IsSkillName is the skill name rule: lowercase words joined by single hyphens, at most 64
// characters.
func IsSkillName(name string) bool { return announce.IsDocumentName(name) }

// isSkill is the rule a document must pass to be listed: a skill name and a description of 1
// to MaxSkillDescriptionBytes bytes.
func isSkill(name, description string) bool {
	return IsSkillName(name) && description != "" && len(description) <= MaxSkillDescriptionBytes && utf8.ValidString(description)
}

// IsSkillCallable reports whether an entry is a skill callable
// (docs/development.md#the-declaration-compiler): it denotes nexus.skill.load, or it is routed to a
// Runner's own skill tool.
func IsSkillCallable(e Entry) bool {
	return e.Canonical == CanonicalSkill || (e.Route != nil && e.Route.ToolName == skillWire)
}

// skillWire is the served name a route carries to reach a Runner's own skill tool: the stored
// wire name of nexus.skill.load, the one kernel spelling the route grammar lets through.
var skillWire = func() string {
	k, _ := announce.LookupKernelName(CanonicalSkill)
	return k.Wire
}()

func skillCatalog(set *Set, runners map[string]*Runner, kernel []KernelSkill) SkillCatalog {
	kernelDocs := kernelSkillDocs(kernel)
	cat := SkillCatalog{}
	for i := range set.entries {
		e := set.entries[i].public()
		if !IsSkillCallable(e) {
			continue
		}
		var docs []SkillEntry
		if e.Route != nil {
			r := runners[lowerID(e.Route.RunnerID)]
			if r == nil {
				continue
			}
			for _, d := range r.Announcement.Documents {
				if isSkill(d.Name, d.Description) {
					docs = append(docs, SkillEntry{Callable: e.Callable, Name: d.Name, Description: d.Description,
						Source: SourceRunner, RunnerExecutorPublicID: lowerID(r.PublicID)})
				}
			}
		} else {
			for _, d := range kernelDocs {
				d.Callable = e.Callable
				docs = append(docs, d)
			}
		}
		sort.SliceStable(docs, func(a, b int) bool { return docs[a].Name < docs[b].Name })
		cat = append(cat, docs...)
	}
	return cat
}

// kernelSkillDocs keeps the lawful kernel documents, the workspace's copy over the user's.
func kernelSkillDocs(kernel []KernelSkill) []SkillEntry {
	byName := map[string]SkillEntry{}
	for _, k := range kernel {
		if (k.Source != SourceWorkspace && k.Source != SourceUser) || !isSkill(k.Name, k.Description) {
			continue
		}
		if cur, ok := byName[k.Name]; ok && cur.Source == SourceWorkspace {
			continue
		}
		byName[k.Name] = SkillEntry{Name: k.Name, Description: k.Description, Source: k.Source}
	}
	out := make([]SkillEntry, 0, len(byName))
	for _, d := range byName {
		out = append(out, d)
	}
	return out
}
