package projection

import (
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/registry"
)

// MaxSkillsBlockBytes bounds the skills block, header and tail included: it rides in the
// leading user item of every request, so the catalog may not crowd out the conversation. At
// 16 KiB it still lists fifteen skills with the longest description allowed.
const MaxSkillsBlockBytes = 16384

// skillsHeader is the block's first line; {{skill}} is spelled with the set's name for
// nexus.skill.load. The title is the registry's constant, which the skill tool's texts quote.
const skillsHeader = registry.SkillsBlockTitle + ". Before you act on a skill listed below, load its full instructions by calling the tool named at the start of its line, for example {{skill}}, with the skill's name."

// SkillsBlock renders the skills block (docs/development.md#the-declaration-compiler) of a
// projection: one line per catalog entry of an offered callable, in catalog order, under the
// header, bounded by MaxSkillsBlockBytes with a tail line counting what was left out. ok is false
// when no skill callable is offered, and then there is no block. Whether the prompt assembly in use
// has a skills block at all is the caller's decision.
func SkillsBlock(set *declare.Set, p Projection, catalog declare.SkillCatalog) (block string, ok bool) {
	offered := make(map[string]bool, len(p.Callables))
	for _, e := range p.Entries {
		if declare.IsSkillCallable(e) {
			offered[e.Callable] = true
		}
	}
	var lines, callables []string
	for _, c := range catalog {
		if !offered[c.Callable] {
			continue
		}
		line := "- " + c.Callable + " / " + c.Name
		if c.Source == declare.SourceRunner {
			line += " [" + c.RunnerExecutorPublicID + "]"
		}
		lines = append(lines, line+": "+strings.Join(strings.Fields(c.Description), " "))
		callables = append(callables, c.Callable)
	}
	if len(lines) == 0 {
		return "", false
	}
	return bounded(header(set, callables), lines), true
}

// header spells {{skill}} with the set's spelling of nexus.skill.load, or with the first
// listed callable when no listed line uses that spelling.
func header(set *declare.Set, listed []string) string {
	name, ok := set.Spelling(declare.CanonicalSkill)
	used := false
	for _, c := range listed {
		if ok && c == name {
			used = true
			break
		}
	}
	if !used {
		name = listed[0]
	}
	return registry.Render(skillsHeader, func(string) string { return name })
}

// bounded keeps the first k lines for the largest k that fits with the tail line for the rest;
// a line is never skipped to fit a later one, nor cut.
func bounded(head string, lines []string) string {
	size := len(head)
	k := 0
	for k < len(lines) {
		next := size + 1 + len(lines[k])
		rest := len(lines) - k - 1
		if rest > 0 {
			next += 1 + len(tail(rest))
		}
		if next > MaxSkillsBlockBytes {
			break
		}
		size += 1 + len(lines[k])
		k++
	}
	var b strings.Builder
	b.WriteString(head)
	for _, l := range lines[:k] {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	if k < len(lines) {
		b.WriteByte('\n')
		b.WriteString(tail(len(lines) - k))
	}
	return b.String()
}

func tail(n int) string {
	if n == 1 {
		return "(1 more skill not shown.)"
	}
	return "(" + strconv.Itoa(n) + " more skills not shown.)"
}
