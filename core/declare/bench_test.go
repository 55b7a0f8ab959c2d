package declare

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// B4 measures the compiler against encoding/json doing the least it could with the same bytes
// (json.Unmarshal into any, then json.Marshal), side by side in one run:
//
//   - compile: the whole kernel catalog declared plainly plus three aliases, checked, rendered
//     and sorted;
//   - freeze10k: an acceptance that imports a Runner's 10,000 model-facing tools (deferred,
//     routed), renders, sorts and bounds the set; the baseline reads and writes the same
//     announced tool list. An imported entry is at least about 200 bytes, so 10,000 of them are
//     always over the 1 MiB bound of a frozen set: this acceptance does every step up to the
//     bound and is refused there (content_too_large), which is the most work an import of
//     that size can cost;
//   - freeze512: a lawful acceptance of the most tools one announcement may hold
//     (announce.MaxTools), frozen whole with its environment and skill catalog;
//   - freeze10k-providers: the same 10,000 tools imported from the workspace's tool providers
//     instead (tool_provider_tools ["*"]), spread over 40 providers of 256 (one announces at
//     most announce.MaxTools), also refused at the bound; its ratio is against the Runner import of
//     freeze10k in the same run (the goal: within 1.2x).
//
// Each pair also runs interleaved in one benchmark that reports the ratio, which is the number
// the goal (at most 5x) is about.

func BenchmarkB4(b *testing.B) {
	c, reg := realCompiler(b)
	kernel := kernelSetWithAliases(b, reg)

	b.Run("compile", func(b *testing.B) {
		b.SetBytes(int64(len(kernel)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Compile(kernel); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compile-baseline", func(b *testing.B) {
		b.SetBytes(int64(len(kernel)))
		b.ReportAllocs()
		for b.Loop() {
			jsonRoundTrip(b, kernel)
		}
	})
	b.Run("compile-ratio", func(b *testing.B) {
		ratio(b, func() {
			if _, err := c.Compile(kernel); err != nil {
				b.Fatal(err)
			}
		}, func() { jsonRoundTrip(b, kernel) })
	})
	for _, fz := range []struct {
		name string
		n    int
	}{{"freeze10k", 10000}, {"freeze512", announce.MaxTools}} {
		in, tools := freezeImport(b, fz.n)
		accept := func() {
			if _, err := c.Accept(in); err != nil && fz.n <= announce.MaxTools {
				b.Fatal(err)
			}
		}
		b.Run(fz.name, func(b *testing.B) {
			b.SetBytes(int64(len(tools)))
			b.ReportAllocs()
			for b.Loop() {
				accept()
			}
		})
		b.Run(fz.name+"-baseline", func(b *testing.B) {
			b.SetBytes(int64(len(tools)))
			b.ReportAllocs()
			for b.Loop() {
				jsonRoundTrip(b, tools)
			}
		})
		b.Run(fz.name+"-ratio", func(b *testing.B) {
			ratio(b, accept, func() { jsonRoundTrip(b, tools) })
		})
	}
	runnerIn, tools := freezeImport(b, 10000)
	providerIn := providerImport(b, 10000)
	acceptRunner := func() { _, _ = c.Accept(runnerIn) }
	acceptProviders := func() { _, _ = c.Accept(providerIn) }
	b.Run("freeze10k-providers", func(b *testing.B) {
		b.SetBytes(int64(len(tools)))
		b.ReportAllocs()
		for b.Loop() {
			acceptProviders()
		}
	})
	b.Run("freeze10k-providers-vs-runner", func(b *testing.B) {
		ratio(b, acceptProviders, acceptRunner)
	})
}

// providerImport is an acceptance importing n tools from the workspace's tool providers, the
// tools of freezeImport spread over as many providers as announce.MaxTools requires.
func providerImport(tb testing.TB, n int) Acceptance {
	tb.Helper()
	in, _ := freezeImport(tb, n)
	tools := in.Runners[0].Announcement.Tools
	var providers []Provider
	for start := 0; start < len(tools); start += announce.MaxTools / 2 {
		id := fmt.Sprintf("01900000-0000-7000-8000-%012d", 100+start)
		providers = append(providers, Provider{PublicID: id, DisplayName: id,
			Announcement: announce.Announcement{Tools: tools[start:min(start+announce.MaxTools/2, len(tools))]}})
	}
	return Acceptance{Imports: &Imports{ToolProviderTools: []string{"*"}}, Providers: providers}
}

// freezeImport is an acceptance importing n tools of one Runner, and the raw JSON of the
// announced tool list it reads.
func freezeImport(tb testing.TB, n int) (Acceptance, []byte) {
	tb.Helper()
	tools := make([]announce.Tool, n)
	for i := range tools {
		d := fmt.Sprintf("Tool number %d of the build machine: reads a path and returns its text.", i)
		schema := fmt.Sprintf(`{"type":"object","properties":{"path":{"type":"string","description":"The file to read, relative to the workspace."},"limit":{"type":"integer","minimum":1,"maximum":%d}},"required":["path"],"additionalProperties":false}`, i+1)
		tools[i] = announce.Tool{Name: fmt.Sprintf("tool_%05d", i), Description: &d, InputSchema: json.RawMessage(schema)}
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		tb.Fatal(err)
	}
	return Acceptance{
		Imports:   &Imports{RunnerExecutorPublicIDs: []string{runner51}},
		Selection: runner51,
		Runners:   []Runner{{PublicID: runner51, DisplayName: "build-box", Eligible: true, Announcement: announce.Announcement{Tools: tools}}},
	}, raw
}

func jsonRoundTrip(b *testing.B, raw []byte) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		b.Fatal(err)
	}
	if _, err := json.Marshal(v); err != nil {
		b.Fatal(err)
	}
}

// ratio runs work and baseline alternately and reports work's time over baseline's.
func ratio(b *testing.B, work, baseline func()) {
	var tw, tb time.Duration
	for b.Loop() {
		start := time.Now()
		work()
		mid := time.Now()
		baseline()
		tw += mid.Sub(start)
		tb += time.Since(mid)
	}
	b.ReportMetric(float64(tw)/float64(tb), "x-baseline")
	b.ReportMetric(0, "ns/op")
}

// TestFreezeBenchmarkInputs: the 512-tool acceptance of B4 succeeds and imports every tool,
// deferred and routed; the 10,000-tool one goes through to the bound of the assembled set.
func TestFreezeBenchmarkInputs(t *testing.T) {
	t.Parallel()
	c, _ := realCompiler(t)
	in, _ := freezeImport(t, announce.MaxTools)
	frozen, err := c.Accept(in)
	if err != nil {
		t.Fatal(err)
	}
	entries := frozen.ToolDefinitions.Entries()
	if len(entries) != announce.MaxTools {
		t.Fatalf("%d entries", len(entries))
	}
	for _, e := range entries {
		if !e.DeferLoading || e.Route == nil || e.Route.ToolName != e.Callable {
			t.Fatalf("entry %+v", e)
		}
	}
	in, _ = freezeImport(t, 10000)
	_, err = c.Accept(in)
	if r := refusalOf(t, err); r.Word != WordContentTooLarge || r.Path != "" {
		t.Fatalf("10,000 tools: %+v", r)
	}
	pin := providerImport(t, 10000)
	if len(pin.Providers) != 40 {
		t.Fatalf("%d providers", len(pin.Providers))
	}
	_, err = c.Accept(pin)
	if r := refusalOf(t, err); r.Word != WordContentTooLarge || r.Path != "" {
		t.Fatalf("10,000 provider tools: %+v", r)
	}
	pin = providerImport(t, announce.MaxTools)
	frozen, err = c.Accept(pin)
	if err != nil {
		t.Fatal(err)
	}
	if got := frozen.ToolDefinitions.Len(); got != announce.MaxTools {
		t.Fatalf("%d provider tools frozen", got)
	}
	for _, e := range frozen.ToolDefinitions.Entries() {
		if !e.DeferLoading || e.Route != nil || e.Import == nil {
			t.Fatalf("entry %+v", e)
		}
	}
}
