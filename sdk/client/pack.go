package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"github.com/nexuskernel/nexus/contracts/nexus/v1/packs"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Pack is an adaptation pack: alias entries that give kernel tools the spellings a model
// family was trained on (docs/agent-tools.md#adaptation-packs). A pack holds no kernel prose:
// an alias that needs a kernel text in other words carries a recut, rendered against the served
// template when the pack is applied.
type Pack struct {
	// Name is the pack's word, the NAME of `nexus agent configure --pack NAME`.
	Name string `json:"name"`
	// Description says whose spellings the pack holds.
	Description string `json:"description"`
	// Aliases are the pack's entries, each rendered by AliasSpec.Entry.
	Aliases []AliasSpec `json:"aliases"`
}

// ErrInvalidPack is wrapped by every error of a pack that is wrong in itself.
var ErrInvalidPack = errors.New("sdk: invalid adaptation pack")

// ErrUnknownPack is wrapped by ShippedPack's error for a name no shipped pack has.
var ErrUnknownPack = errors.New("sdk: no such adaptation pack")

// packName is the form of a pack's name: it is a file name of contracts/nexus/v1/packs and a
// command-line word, so lowercase letters, digits and hyphens, at most 63 of them (a handle's
// bound).
var packName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ParsePack reads one pack, strictly: one JSON object, no repeated or unknown key, a name of
// packName's form, at least one alias, alias names unique, and every alias a lawful AliasSpec
// (a recut with a non-empty anchor). Whether a recut fits is known only against the served
// templates, in Entries.
func ParsePack(raw []byte) (*Pack, error) {
	facts, err := jsonwire.Scan(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPack, err)
	}
	if facts.DuplicateKey {
		return nil, fmt.Errorf("%w: an object repeats a key", ErrInvalidPack)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p *Pack
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPack, err)
	}
	switch {
	case p == nil:
		return nil, fmt.Errorf("%w: a pack is an object, not null", ErrInvalidPack)
	case !packName.MatchString(p.Name):
		return nil, fmt.Errorf("%w: name %q is not lowercase letters, digits and hyphens (at most 63)", ErrInvalidPack, p.Name)
	case len(p.Aliases) == 0:
		return nil, fmt.Errorf("%w: pack %q has no aliases", ErrInvalidPack, p.Name)
	}
	seen := make(map[string]bool, len(p.Aliases))
	for i, a := range p.Aliases {
		if err := a.check(); err != nil {
			return nil, fmt.Errorf("%w: pack %q, aliases[%d]: %w", ErrInvalidPack, p.Name, i, err)
		}
		if seen[a.Name] {
			return nil, fmt.Errorf("%w: pack %q names alias %q twice", ErrInvalidPack, p.Name, a.Name)
		}
		seen[a.Name] = true
	}
	return p, nil
}

// ShippedPacks are the names of the packs this SDK ships (contracts/nexus/v1/packs), sorted.
func ShippedPacks() []string {
	files, _ := fs.Glob(packs.Files, "*.json") // the pattern is constant, so it cannot be malformed
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(f, ".json"))
	}
	sort.Strings(names)
	return names
}

// ShippedPack returns the shipped pack of that name, or an error wrapping ErrUnknownPack that
// lists the shipped ones.
func ShippedPack(name string) (*Pack, error) {
	if !packName.MatchString(name) {
		return nil, unknownPack(name)
	}
	raw, err := packs.Files.ReadFile(name + ".json")
	if err != nil {
		return nil, unknownPack(name)
	}
	p, err := ParsePack(raw)
	if err != nil {
		return nil, err
	}
	if p.Name != name {
		return nil, fmt.Errorf("%w: %s.json names itself %q", ErrInvalidPack, name, p.Name)
	}
	return p, nil
}

func unknownPack(name string) error {
	return fmt.Errorf("%w: %q (shipped: %s)", ErrUnknownPack, name, strings.Join(ShippedPacks(), ", "))
}

// Entries renders the pack's aliases against the served templates (TemplatesFrom of GET
// /agent_api/v1/tools), in the pack's order: the compact alias entries to declare. It is all or
// nothing: an alias whose recut no longer fits fails the whole pack with its *AnchorMoved, and a
// client that gets one keeps its previous declaration.
func (p *Pack) Entries(templates Templates) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(p.Aliases))
	for _, a := range p.Aliases {
		e, err := a.Entry(templates)
		if err != nil {
			return nil, fmt.Errorf("adaptation pack %q: %w", p.Name, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Apply returns declaration (a tool_definitions array; absent, null and [] are the empty one)
// with the pack's entries in it: an entry whose callable name an alias of the pack takes is
// dropped, the others keep their order and bytes, and the pack's entries follow. Applying a pack
// again after the kernel re-cut a text therefore replaces its aliases instead of doubling them.
func (p *Pack) Apply(declaration json.RawMessage, templates Templates) (json.RawMessage, error) {
	entries, err := p.Entries(templates)
	if err != nil {
		return nil, err
	}
	kept := []json.RawMessage{}
	if d := bytes.TrimSpace(declaration); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		if kept, err = jsonwire.SplitArray(d); err != nil {
			return nil, fmt.Errorf("the declaration is not a JSON array: %w", err)
		}
	}
	taken := make(map[string]bool, len(p.Aliases))
	for _, a := range p.Aliases {
		taken[a.Name] = true
	}
	out := make([]json.RawMessage, 0, len(kept)+len(entries))
	for _, e := range kept {
		if !taken[callableName(e)] {
			out = append(out, e)
		}
	}
	out = append(out, entries...)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // kernel texts quote <task_result>; keep them as written
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// callableName is an entry's callable name, flat or nested; "" for an entry without one, which
// no alias name equals, so Apply keeps it for the kernel to judge.
func callableName(entry json.RawMessage) string {
	var e struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(entry, &e) != nil {
		return ""
	}
	if e.Function.Name != "" {
		return e.Function.Name
	}
	return e.Name
}

// PackEntries renders the pack against this server's catalog: the alias entries a profile's (or a
// step's) declaration takes, as Entries returns them.
func (c *Client) PackEntries(ctx context.Context, p *Pack) ([]json.RawMessage, error) {
	cat, err := c.Tools(ctx)
	if err != nil {
		return nil, err
	}
	return p.Entries(TemplatesFrom(cat.Tools))
}
