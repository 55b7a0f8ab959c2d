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
//     (announce.MaxTools), frozen whole with its environment and skill catalog.
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
}
