package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/announce"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// MaxSkillDetailChars clips the name quoted in a skill_unknown result
// (docs/agent-tools.md#memory-and-skills): the same 120 characters as a memory path, enough to
// recognise the name on one line.
const MaxSkillDetailChars = 120

// SkillSource is the root a kernel skill is read from.
type SkillSource string

// The two roots that hold skills (docs/agent-tools.md#memory-and-skills): never a conversation.
const (
	SourceWorkspace SkillSource = RootWorkspace
	SourceUser      SkillSource = RootUser
)

// skillPrefix is the name prefix of every skill document inside its root.
const skillPrefix = memsdk.SkillsFolder + "/"

// SkillEntry is one kernel entry of a frozen skill catalog, in the shape
// (docs/development.md#the-declaration-compiler). Callable is left empty here: acceptance fills it
// with the skill callable's spelling.
type SkillEntry struct {
	Callable    string      `json:"callable"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Source      SkillSource `json:"source"`
}

// SkillPath is a skill's logical path, <root>/skills/<name>.
func SkillPath(source SkillSource, name string) string {
	return string(source) + "/" + skillPrefix + name
}

// isSkillDescription is the rule a stored description must keep for its document to be listed:
// 1 to MaxSkillDescriptionBytes bytes of UTF-8 (the door refuses anything else, so this only
// guards against rows written some other way).
func isSkillDescription(d string) bool {
	return d != "" && len(d) <= memsdk.MaxSkillDescriptionBytes && utf8.ValidString(d)
}

// KernelSkillCatalog answers the kernel entries of a skill catalog frozen at acceptance
// (docs/agent-tools.md#memory-and-skills, docs/development.md#the-declaration-compiler): the skill
// documents under workspace/skills/ and user/skills/ of the resolved bindings named workspace and
// user, the workspace document winning a name present in both, ordered by skill name in byte order.
// A document is a skill only if its name is one skill-name segment after skills/ and it carries a
// description. Missing roots contribute nothing.
func (s *Store) KernelSkillCatalog(ctx context.Context, scopes []memsdk.Scope) ([]SkillEntry, error) {
	byName := map[string]SkillEntry{}
	for _, source := range []SkillSource{SourceWorkspace, SourceUser} {
		scope, ok := SkillSourceScope(scopes, source)
		if !ok {
			continue
		}
		rows, err := s.documents(ctx, scope, skillPrefix, false)
		if err != nil {
			return nil, failure(err)
		}
		for _, r := range rows {
			name := strings.TrimPrefix(r.Name, skillPrefix)
			if !announce.IsDocumentName(name) || !r.Description.Valid || !isSkillDescription(r.Description.String) {
				continue
			}
			if _, taken := byName[name]; taken {
				continue // the workspace's document, read first, wins
			}
			byName[name] = SkillEntry{Name: name, Description: r.Description.String, Source: source}
		}
	}
	out := make([]SkillEntry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SkillSourceScope finds the resolved binding that serves a frozen skill source. ok is false
// when the root no longer resolves for the run: the skill call then fails tool_not_served with
// SkillNotServedDetail.
func SkillSourceScope(scopes []memsdk.Scope, source SkillSource) (memsdk.Scope, bool) {
	for _, s := range scopes {
		if s.Binding == string(source) {
			return s, true
		}
	}
	return memsdk.Scope{}, false
}

// SkillNotServedDetail is the error detail of a kernel skill call whose frozen root no longer
// resolves (docs/agent-tools.md#delegation-and-conversations).
func SkillNotServedDetail(source SkillSource, name string) string {
	return fmt.Sprintf("memory root %s no longer serves skill %s", source, name)
}

// SkillUnknownResult is the error result skill_unknown: <name>, the name cut to its first
// MaxSkillDetailChars characters; an empty name (missing or not a string) gives the code alone.
func SkillUnknownResult(name string) memsdk.Result {
	text := CodeSkillUnknown
	if name != "" {
		text += ": " + clipChars(name, MaxSkillDetailChars)
	}
	return memsdk.Result{Text: text, IsError: true, Title: TitleSkillRefused}
}

func clipChars(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}

// LoadSkill reads a kernel skill for the skill tool (docs/agent-tools.md#memory-and-skills,
// docs/agent-tools.md#delegation-and-conversations
// docs/agent-tools.md#delegation-and-conversations) from the binding serving its frozen source
// (SkillSourceScope): always this store, also when the workspace overrides the memory family. A
// name outside the skill grammar, or whose document is gone, answers skill_unknown; a found
// document answers its body sliced exactly as memory_read with no offset or limit, titled read
// <root>/skills/<name>. The error is non-nil only when the store failed (wrapping
// memory.ErrUnavailable).
func (s *Store) LoadSkill(ctx context.Context, source memsdk.Scope, name string) (memsdk.Result, error) {
	if !announce.IsDocumentName(name) {
		return SkillUnknownResult(name), nil
	}
	if err := memsdk.ValidScope(source); err != nil {
		return memsdk.Result{}, fmt.Errorf("%w: skill source: %w", memsdk.ErrUnavailable, err)
	}
	resp, err := s.Read(ctx, &memsdk.ReadRequest{Scope: source, Name: skillPrefix + name})
	if errors.Is(err, memsdk.ErrNotFound) {
		return SkillUnknownResult(name), nil
	}
	if err != nil {
		return memsdk.Result{}, failure(err)
	}
	return memsdk.Result{
		Text:  memsdk.ReadSlice(resp.Content, 1, memsdk.MaxReadLines),
		Title: "read " + SkillPath(SkillSource(source.Binding), name),
	}, nil
}

// skillName answers the skill name of a document name under skills/, and whether it is one
// lawful skill-name segment.
func skillName(docName string) (string, bool) {
	name, ok := strings.CutPrefix(docName, skillPrefix)
	return name, ok && announce.IsDocumentName(name)
}
