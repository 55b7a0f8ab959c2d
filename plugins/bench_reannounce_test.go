package plugins

import (
	"strconv"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// BenchmarkReannounce measures the host's part of a list change (docs/plugins.md#protocol-11):
// from a 1.1 plugin's change of its announcement (the Advance after it) to the executor plane
// receiving the re-announcement (the stream, Describe, validation, the write), with the spacing
// shortened to a nanosecond since it is a prescribed wait, not work. The baseline, in the same
// run and process, is a call's answer from the same plugin: from the moment its handler returns to
// the plane receiving the commit. The ratio says what a re-announcement costs in answers.
func BenchmarkReannounce(b *testing.B) {
	e := scenarioEntry(b, "bench", plugin.KindToolProvider, "reannounce")
	timings := fastTimings
	timings.ReannounceSpacing = time.Nanosecond
	th := startHostWith(b, newPlane(), timings, e)
	th.waitState(b, "bench", StateReady, 20*time.Second)
	id := th.executor(b, "bench")
	stamped := func(key string) time.Time {
		got := th.plane.commitsFor(key)
		ns, err := strconv.ParseInt(text(b, got[0]), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return time.Unix(0, ns)
	}
	var reannounce, answer []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		flip, stamp := "f"+strconv.Itoa(i), "s"+strconv.Itoa(i)
		before := th.plane.announcementCount(id)
		th.plane.push(id, toolClaim(flip, "flip", `{}`, &announce.EffectWrite))
		th.plane.await(b, 20*time.Second, "the re-announcement", func() bool { return len(th.plane.announcements[id]) > before })
		seen := time.Now()
		th.plane.await(b, 20*time.Second, "the change's answer", func() bool { return countTask(th.plane.commits, flip) == 1 })
		reannounce = append(reannounce, seen.Sub(stamped(flip)))

		th.plane.push(id, toolClaim(stamp, "stamp", `{}`, &announce.EffectWrite))
		th.plane.await(b, 20*time.Second, "the answer", func() bool { return countTask(th.plane.commits, stamp) == 1 })
		answer = append(answer, time.Since(stamped(stamp)))
	}
	b.StopTimer()
	re, ans := median(reannounce), median(answer)
	b.ReportMetric(float64(re.Microseconds()), "reannounce-p50-µs")
	b.ReportMetric(float64(ans.Microseconds()), "answer-p50-µs")
	b.ReportMetric(float64(re)/float64(ans), "ratio-p50")
}
