package kernel

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/projection"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// tool_search's limits (docs/agent-tools.md#tool-search-and-deferred-tools).
const (
	// DefaultSearchLimit and MaxSearchLimit bound the tools one answer carries: a handful is
	// what a model reads before choosing, twenty whole schemas already make a long result.
	DefaultSearchLimit = 5
	MaxSearchLimit     = 20
	// gramLen is the length of the byte n-grams the index posts: three bytes are selective
	// enough that a term's rarest gram names few documents, and a set of 10,000 callables posts
	// a few million of them at most.
	gramLen = 3
)

// SearchIndex is tool_search's search space over one frozen declaration and its skill catalog
// (docs/agent-tools.md#tool-search-and-deferred-tools): every callable entry in the frozen order,
// the text each is matched by, its result item already encoded, and a trigram index over the texts.
// It is built once per frozen declaration and only read afterwards, so one index serves concurrent
// searches.
type SearchIndex struct {
	entries []indexEntry
	byName  map[string]int32
	docs    []indexDoc
	// grams posts, for each byte trigram, the ascending ids of the documents whose text holds it.
	grams map[uint32][]int32
	// size estimates the memory the index holds, for the cache's bound.
	size int
}

// indexEntry is one callable: its canonical tool (when a kernel tool), the encoded head of its
// result item up to the skills list, its skills, and the document of its own text.
type indexEntry struct {
	name      string
	canonical string
	head      []byte
	// headEsc and headCanon are what the item adds, without its skills, to the result's
	// content (escaped as a JSON string) and to its canonical structured_content.
	headEsc, headCanon int
	skills             []indexSkill
}

// indexSkill is one frozen skill catalog entry under its callable, exactly as frozen.
type indexSkill struct {
	item       []byte
	esc, canon int
}

// indexDoc is one matched text: an entry's own, or an entry's joined with one of its skills.
type indexDoc struct {
	text  string
	entry int32
	// skill is the skill's position under its entry, -1 for the entry's own text.
	skill int32
}

// BuildSearchIndex indexes a compiled frozen set and its frozen skill catalog.
func BuildSearchIndex(set *declare.Set, catalog []byte) (*SearchIndex, error) {
	skills, err := catalogItems(catalog)
	if err != nil {
		return nil, err
	}
	entries := set.Entries()
	ix := &SearchIndex{entries: make([]indexEntry, 0, len(entries)), byName: make(map[string]int32, len(entries)),
		grams: map[uint32][]int32{}}
	for _, e := range entries {
		ie := indexEntry{name: e.Callable, canonical: e.Canonical}
		fields := []string{e.Callable, description(e.Value)}
		members := []jsonwire.Field{jsonwire.M("name", jsonwire.String(e.Callable)), jsonwire.M("definition", projection.ProjectEntry(e))}
		if route, ok := e.Value.Get("route"); ok && e.Route != nil {
			members = append(members, jsonwire.M("route", route))
			fields = append(fields, e.Route.RunnerID, e.Route.ToolName)
		}
		// The item as it reads with no skills; its head is everything before the closing "]}",
		// where the matching skills go.
		item := jsonwire.Object(append(members, jsonwire.M("skills", jsonwire.Array()))...)
		closed := item.Encode()
		ie.head = closed[:len(closed)-2]
		ie.headEsc = escapedLen(closed)
		ie.headCanon = canonicalSize(item)
		text := strings.ToLower(strings.Join(fields, " "))
		n := int32(len(ix.entries))
		ix.addDoc(text, n, -1)
		for _, s := range skills[e.Callable] {
			ix.addDoc(text+" "+strings.ToLower(s.name+" "+s.description), n, int32(len(ie.skills)))
			ie.skills = append(ie.skills, indexSkill{item: s.item, esc: escapedLen(s.item), canon: s.canon})
		}
		ix.byName[e.Callable] = n
		ix.entries = append(ix.entries, ie)
		ix.size += len(ie.head) + len(text)
	}
	// Beside the bytes, what the structures around them cost: a map slot per gram and per name,
	// a struct per entry and per document, and the postings' spare capacity.
	const gramOverhead, entryOverhead, docOverhead = 64, 160, 40
	for _, p := range ix.grams {
		ix.size += 4*cap(p) + gramOverhead
	}
	ix.size += entryOverhead*len(ix.entries) + docOverhead*len(ix.docs)
	return ix, nil
}

// addDoc adds a text and posts its trigrams; documents are added in frozen order, so every
// posting list is ascending.
func (ix *SearchIndex) addDoc(text string, entry, skill int32) {
	id := int32(len(ix.docs))
	ix.docs = append(ix.docs, indexDoc{text: text, entry: entry, skill: skill})
	ix.size += len(text)
	for i := 0; i+gramLen <= len(text); i++ {
		g := gramOf(text[i:])
		p := ix.grams[g]
		if n := len(p); n > 0 && p[n-1] == id {
			continue
		}
		ix.grams[g] = append(p, id)
	}
}

func gramOf(s string) uint32 { return uint32(s[0])<<16 | uint32(s[1])<<8 | uint32(s[2]) }

// description is an entry's description: function.description for the nested form (aliases
// included, whose rendered text sits there), description for the flat form.
func description(v jsonwire.Value) string {
	if fn, ok := v.Get("function"); ok {
		d, _ := fn.GetString("description")
		return d
	}
	d, _ := v.GetString("description")
	return d
}

// catalogSkill is one frozen catalog entry: its bytes exactly as frozen and what it is matched by.
type catalogSkill struct {
	item              []byte
	canon             int
	name, description string
}

// catalogItems reads a frozen skill catalog into its entries by callable, in catalog order.
func catalogItems(catalog []byte) (map[string][]catalogSkill, error) {
	out := map[string][]catalogSkill{}
	if s := strings.TrimSpace(string(catalog)); s == "" || s == "null" {
		return out, nil
	}
	v, err := jsonwire.Decode(catalog)
	if err != nil || !v.IsArray() {
		return nil, fmt.Errorf("kernel: the frozen skill catalog is not an array")
	}
	for _, it := range v.Items() {
		callable, _ := it.GetString("callable")
		name, _ := it.GetString("name")
		desc, _ := it.GetString("description")
		out[callable] = append(out[callable], catalogSkill{item: it.Encode(), canon: canonicalSize(it), name: name, description: desc})
	}
	return out, nil
}

// escapedLen is how many bytes b adds to a JSON string that holds it, in the canonical
// escaping the result bound is measured with (jsonwire.AppendString): its quoted length
// without the two quotes.
func escapedLen(b []byte) int { return jsonwire.QuotedLen(string(b)) - len(`""`) }

// canonicalSize is the length of v's canonical JSON (sdk/jsonwire): its compact encoding with
// every number in its shortest round-trip form. Strings escape alike in both encodings, and
// sorting keys does not change a length.
func canonicalSize(v jsonwire.Value) int { return v.EncodedSize() + numberDelta(v) }

// numberDelta is how much longer v's numbers are in canonical form than as written. A literal
// with no double value keeps its length (the store would refuse it; it cannot be in a set).
func numberDelta(v jsonwire.Value) int {
	switch v.Kind() {
	case jsonwire.NumberKind:
		lit, _ := v.NumberText()
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil || math.IsInf(f, 0) {
			return 0
		}
		return len(jsonwire.AppendNumber(nil, f)) - len(lit)
	case jsonwire.ArrayKind:
		d := 0
		for _, it := range v.Items() {
			d += numberDelta(it)
		}
		return d
	case jsonwire.ObjectKind:
		d := 0
		for _, m := range v.Members() {
			d += numberDelta(m.Value)
		}
		return d
	}
	return 0
}

// Result framing, and what it adds to the bounded form: the canonical JSON of
// {content, structured_content} (docs/api.md#limits), where content is the result text as a JSON
// string and structured_content the same object. "false" is the longer of the two truncated
// values, so a size counted with it never undercounts.
const (
	resultOpen  = `{"tools":[`
	resultClose = `],"truncated":`
)

var resultFixed = func() int {
	closing := resultClose + "false}"
	envelopeFrame := len(`{"content":""`) + len(`,"structured_content":`) + len(`}`)
	return envelopeFrame + escapedLen([]byte(resultOpen)) + escapedLen([]byte(closing)) + len(resultOpen) + len(closing)
}()

// match is one matching entry with the positions of its matching skills.
type match struct {
	entry  int32
	skills []int32
}

// Search answers tool_search for the trimmed query q and limit
// (docs/agent-tools.md#tool-search-and-deferred-tools): the exact callable alone when q names one,
// else the entries matching every term, in frozen order; the first limit matches are the
// candidates, each added whole while the result stays within the result bound; truncated when a
// match was left out. It answers the result object's compact JSON.
func (ix *SearchIndex) Search(q string, limit int) []byte {
	return ix.render(ix.find(q, limit, false), limit)
}

// Scan is Search without the trigram index: every document in frozen order, the naive
// reference the index must agree with and is measured against (B5).
func (ix *SearchIndex) Scan(q string, limit int) []byte {
	return ix.render(ix.find(q, limit, true), limit)
}

// find collects up to limit+1 matches: one more than a page, to know whether more exist.
func (ix *SearchIndex) find(q string, limit int, scan bool) []match {
	q = strings.TrimSpace(q)
	i, ok := ix.byName[q]
	if scan {
		// The naive reference compares every name, as a search without an index would.
		i, ok = 0, false
		for k := range ix.entries {
			if ix.entries[k].name == q {
				i, ok = int32(k), true
				break
			}
		}
	}
	if ok {
		m := match{entry: i}
		for s := range ix.entries[i].skills {
			m.skills = append(m.skills, int32(s))
		}
		return []match{m}
	}
	terms := strings.Fields(strings.ToLower(q))
	if len(terms) == 0 {
		return nil
	}
	var candidates []int32
	if !scan {
		var ok bool
		if candidates, ok = ix.candidates(terms); !ok {
			candidates = nil
			scan = true
		}
	}
	var out []match
	var cur *match
	ownMatched := false
	visit := func(d int32) bool {
		doc := &ix.docs[d]
		if cur == nil || cur.entry != doc.entry {
			if cur != nil && (ownMatched || len(cur.skills) > 0) {
				out = append(out, *cur)
				if len(out) > limit {
					return false
				}
			}
			cur, ownMatched = &match{entry: doc.entry}, false
		}
		if ownMatched || !holdsAll(doc.text, terms) {
			return true
		}
		if doc.skill < 0 {
			ownMatched = true
			for s := range ix.entries[doc.entry].skills {
				cur.skills = append(cur.skills, int32(s))
			}
			return true
		}
		cur.skills = append(cur.skills, doc.skill)
		return true
	}
	if scan {
		for d := range ix.docs {
			if !visit(int32(d)) {
				return out
			}
		}
	} else {
		for _, d := range candidates {
			if !visit(d) {
				return out
			}
		}
	}
	if cur != nil && (ownMatched || len(cur.skills) > 0) {
		out = append(out, *cur)
	}
	return out
}

func holdsAll(text string, terms []string) bool {
	for _, t := range terms {
		if !strings.Contains(text, t) {
			return false
		}
	}
	return true
}

// candidates intersects the posting lists of every trigram of every term long enough to have
// one, smallest first, so that the documents left to verify are those holding them all. ok is
// false when no term has a trigram: every document is then a candidate.
func (ix *SearchIndex) candidates(terms []string) ([]int32, bool) {
	var lists [][]int32
	seen := map[uint32]bool{}
	for _, t := range terms {
		for i := 0; i+gramLen <= len(t); i++ {
			g := gramOf(t[i:])
			if seen[g] {
				continue
			}
			seen[g] = true
			p, ok := ix.grams[g]
			if !ok {
				return nil, true // a trigram no text holds: nothing matches
			}
			lists = append(lists, p)
		}
	}
	if len(lists) == 0 {
		return nil, false
	}
	sort.Slice(lists, func(i, j int) bool { return len(lists[i]) < len(lists[j]) })
	out := append([]int32(nil), lists[0]...)
	for _, p := range lists[1:] {
		if len(out) == 0 {
			break
		}
		out = intersect(out, p)
	}
	return out, true
}

// intersect keeps the ids of a (ascending) that b (ascending, usually longer) holds, galloping
// through b so that a short list costs little against a long one.
func intersect(a, b []int32) []int32 {
	out := a[:0]
	j := 0
	for _, x := range a {
		step := 1
		for j+step < len(b) && b[j+step] < x {
			j += step
			step *= 2
		}
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) {
			break
		}
		if b[j] == x {
			out = append(out, x)
		}
	}
	return out
}

// render writes the result object: the first limit matches, each whole while the bounded form
// stays within envelope.MaxResultBytes, a match that does not fit skipped (and not replaced).
func (ix *SearchIndex) render(matches []match, limit int) []byte {
	truncated := len(matches) > limit
	if truncated {
		matches = matches[:limit]
	}
	buf := append(make([]byte, 0, 1024), resultOpen...)
	size := resultFixed
	n := 0
	for _, m := range matches {
		e := &ix.entries[m.entry]
		add := e.headEsc + e.headCanon
		for i, s := range m.skills {
			sk := &e.skills[s]
			add += sk.esc + sk.canon
			if i > 0 {
				add += 2 // a comma in each of the two encodings
			}
		}
		if n > 0 {
			add += 2
		}
		if size+add > envelope.MaxResultBytes {
			truncated = true
			continue
		}
		size += add
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, e.head...)
		for i, s := range m.skills {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, e.skills[s].item...)
		}
		buf = append(buf, ']', '}')
		n++
	}
	buf = append(buf, resultClose...)
	if truncated {
		return append(buf, "true}"...)
	}
	return append(buf, "false}"...)
}

// Lookup answers the canonical tool of a callable of the set ("" for a function tool); ok is
// false when name is no callable of the set.
func (ix *SearchIndex) Lookup(name string) (canonical string, ok bool) {
	i, ok := ix.byName[name]
	if !ok {
		return "", false
	}
	return ix.entries[i].canonical, true
}

// Len is the number of callables indexed.
func (ix *SearchIndex) Len() int { return len(ix.entries) }
