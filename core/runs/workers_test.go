package runs_test

import (
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestWorkerLooksAgainAfterWork: one worker, a poll an hour away, and one answer that makes
// three kernel rows of one run runnable: the commit's kicks find room for one, and the worker
// looks again after each row, so the run completes without waiting for the poll.
func TestWorkerLooksAgainAfterWork(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{config: runs.Config{Workers: 1, ModelTimeout: time.Minute, Poll: time.Hour}})
		if err := h.e.Start(h.ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.e.Stop)
		id := h.create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\ncall memory_ls {}\ncall memory_ls {}\ncall memory_ls {}\nround 2\nsay done",` + memoryTools + `}}],"approval_mode":"bypass"}`).Run.PublicID
		d, err := h.conv.ReadRunWaiting(h.ctx, h.actor, id, 20*time.Second)
		if err != nil || d.Status != "completed" {
			t.Fatalf("run = %+v, %v; want completed long before the poll", d, err)
		}
	})
}
