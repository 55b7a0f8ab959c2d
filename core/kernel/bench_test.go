package kernel

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/registry"
)

// b5Callables is B5's set size: 10,000 callables, about as many as the 1 MiB declaration bound
// admits with a name, a short description and a schema each.
const b5Callables = 10000

// b5Words is a pseudo-word stock: tool descriptions use many distinct words, a few of them
// common to most tools.
func b5Words(rng *rand.Rand, n int) []string {
	syll := []string{"ka", "lo", "mi", "ru", "te", "zo", "pa", "ne", "vi", "sh", "qu", "br", "ex", "on", "ul", "dr", "fa", "gi"}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for k := 2 + rng.Intn(2); k > 0; k-- {
			b.WriteString(syll[rng.Intn(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

var b5Verbs = []string{"get", "list", "read", "write", "sync", "scan", "send", "make", "drop", "tag"}

// b5Set builds B5's frozen declaration: b5Callables function tools named verb_n, each
// described by two words of a 3,000-word stock, about the largest set under the
// declaration bound; two Runner skill callables with 200 skills each; and the queries a model
// would send, by class.
func b5Set(tb testing.TB) (*declare.Set, []byte, map[string][]string) {
	tb.Helper()
	rng := rand.New(rand.NewSource(5))
	words := b5Words(rng, 3000)
	c, err := declare.New(registry.New())
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("[")
	type tool struct{ name, verb, w1, w2 string }
	tools := make([]tool, b5Callables)
	for i := range tools {
		t := tool{verb: b5Verbs[rng.Intn(len(b5Verbs))], w1: words[rng.Intn(len(words))], w2: words[rng.Intn(len(words))]}
		t.name = fmt.Sprintf("%s_%d", t.verb, i)
		tools[i] = t
		if i > 0 {
			b.WriteString(",")
		}
		if i == 17 || i == 4242 {
			fmt.Fprintf(&b, `{"type":"function","name":%q,"description":"Load a %s skill.","parameters":{"type":"object"},"route":{"kind":"runner","runner_executor_public_id":"0190a5e2-0000-7000-8000-%012d","tool_name":"skill"}}`,
				t.name, t.w1, i)
			continue
		}
		fmt.Fprintf(&b, `{"type":"function","name":%q,"description":"%s %s.","parameters":{"type":"object"}}`, t.name, t.w1, t.w2)
	}
	b.WriteString("]")
	set, err := c.Compile([]byte(b.String()))
	if err != nil {
		tb.Fatal(err)
	}
	var cat declare.SkillCatalog
	var skillWords [][2]string
	for _, i := range []int{17, 4242} {
		var entries declare.SkillCatalog
		for k := 0; k < 200; k++ {
			w1, w2 := words[rng.Intn(len(words))], words[rng.Intn(len(words))]
			entries = append(entries, declare.SkillEntry{Callable: tools[i].name, Name: fmt.Sprintf("%s-%s-%d", w1, w2, k),
				Description: "How to " + w1 + " with " + w2 + ".", Source: declare.SourceRunner, RunnerExecutorPublicID: fmt.Sprintf("0190a5e2-0000-7000-8000-%012d", i)})
			skillWords = append(skillWords, [2]string{w1, w2})
		}
		slices.SortFunc(entries, func(a, b declare.SkillEntry) int { return strings.Compare(a.Name, b.Name) })
		cat = append(cat, entries...)
	}
	// The catalog is ordered by callable in the set's order.
	slices.SortStableFunc(cat, func(a, b declare.SkillEntry) int { return strings.Compare(a.Callable, b.Callable) })
	raw, _ := cat.MarshalJSON()
	queries := map[string][]string{}
	for q := 0; q < 200; q++ {
		t := tools[rng.Intn(len(tools))]
		queries["exact"] = append(queries["exact"], t.name)
		queries["words"] = append(queries["words"], t.w1+" "+t.w2)
		queries["verb-word"] = append(queries["verb-word"], strings.ToUpper(t.verb[:1])+t.verb[1:]+" "+t.w1)
		s := skillWords[rng.Intn(len(skillWords))]
		queries["skill"] = append(queries["skill"], s[0]+" "+s[1])
		queries["miss"] = append(queries["miss"], words[rng.Intn(len(words))]+"zz "+t.w2)
		queries["common"] = append(queries["common"], b5Verbs[rng.Intn(len(b5Verbs))])
	}
	return set, raw, queries
}

// TestB5Inputs: B5's set compiles within the declaration bound with all of its callables, and
// every query class answers what it is meant to (a hit, several, or none).
func TestB5Inputs(t *testing.T) {
	t.Parallel()
	set, cat, queries := b5Set(t)
	if set.Len() != b5Callables {
		t.Fatalf("%d callables", set.Len())
	}
	ix, err := BuildSearchIndex(set, cat)
	if err != nil {
		t.Fatal(err)
	}
	for class, qs := range queries {
		for _, q := range qs[:20] {
			got, _ := names(t, ix.Search(q, DefaultSearchLimit))
			if (class == "miss") != (len(got) == 0) {
				t.Errorf("%s %q: %v", class, q, got)
			}
		}
	}
}

// BenchmarkB5ToolSearch is B5: tool_search over 10,000 frozen callables with the index, against
// a naive scan of the same set and texts in the same run, query by query, alternately. It
// reports each side's p99 and how many times faster the index is on average, per query class
// and over their mix. Goal: index p99 at most 1 ms and at least 10x faster than the scan.
func BenchmarkB5ToolSearch(b *testing.B) {
	set, cat, queries := b5Set(b)
	ix, err := BuildSearchIndex(set, cat)
	if err != nil {
		b.Fatal(err)
	}
	classes := []string{"exact", "words", "verb-word", "skill", "miss", "common"}
	var mix []string
	for _, c := range classes {
		mix = append(mix, queries[c]...)
	}
	rand.New(rand.NewSource(1)).Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
	for _, c := range append(classes, "mix") {
		qs := queries[c]
		if c == "mix" {
			qs = mix
		}
		b.Run(c, func(b *testing.B) {
			var idx, scan []time.Duration
			i := 0
			for b.Loop() {
				q := qs[i%len(qs)]
				i++
				start := time.Now()
				ix.Search(q, DefaultSearchLimit)
				mid := time.Now()
				ix.Scan(q, DefaultSearchLimit)
				idx = append(idx, mid.Sub(start))
				scan = append(scan, time.Since(mid))
			}
			ip, sp := p99(idx), p99(scan)
			b.ReportMetric(float64(ip.Nanoseconds())/1e3, "index-p99-µs")
			b.ReportMetric(float64(sp.Nanoseconds())/1e3, "scan-p99-µs")
			b.ReportMetric(float64(sum(scan))/float64(sum(idx)), "x-faster")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkB5Build is what a frozen declaration of B5's size costs once: compiling the stored
// set and indexing it.
func BenchmarkB5Build(b *testing.B) {
	set, cat, _ := b5Set(b)
	c, _ := declare.New(registry.New())
	raw := set.Bytes()
	for b.Loop() {
		s, err := c.Compile(raw)
		if err != nil {
			b.Fatal(err)
		}
		ix, err := BuildSearchIndex(s, cat)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(ix.size)/(1<<20), "index-MiB")
	}
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*99/100]
}

func sum(d []time.Duration) time.Duration {
	var t time.Duration
	for _, x := range d {
		t += x
	}
	return t
}
