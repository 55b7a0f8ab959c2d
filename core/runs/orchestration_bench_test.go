package runs_test

import (
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// benchFan is how many calls one answer makes in the fan benchmarks: a realistic burst of
// parallel helpers.
const benchFan = 16

// BenchmarkWaitedDelegationFan runs one answer that places benchFan waited delegate_task
// branches (each answering in one round) and the continuation that reads them, end to end on
// SQLite; BenchmarkToolFan is the same fan of plain kernel tool calls, the baseline the
// branches' extra rounds, placements and observations are measured against.
func BenchmarkWaitedDelegationFan(b *testing.B) {
	calls := make([]string, benchFan)
	for i := range calls {
		calls[i] = call("delegate_task", map[string]any{"prompt": quickBrief, "wait": true})
	}
	benchFanRun(b, script("Fan out.", calls, []string{"say done"}))
}

func BenchmarkToolFan(b *testing.B) {
	calls := make([]string, benchFan)
	for i := range calls {
		calls[i] = "call memory_ls {}"
	}
	benchFanRun(b, script("Fan out.", calls, []string{"say done"}))
}

func benchFanRun(b *testing.B, main string) {
	s := storetest.Open(b, store.SQLite)
	h := newHarness(b, s, harnessOptions{})
	body := modelStep(main, graphTools)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := h.create(body).Run.PublicID
		h.drain()
		if r := h.run(id); r.Status != "completed" {
			b.Fatalf("run %s", r.Status)
		}
	}
}
