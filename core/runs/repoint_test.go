package runs_test

import (
	"reflect"
	"testing"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestExpansionRepointsReaders: a step that waits on a model step waits on that step's
// continuation once the step's round expands into calls, so it starts only after the lineage's
// answer, not after its first round.
func TestExpansionRepointsReaders(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		c := h.create(`{"steps":[` +
			`{"model":{"key":"first","model":"mock/scripted","prompt":"!mock\nround 1\ncall models_list {}\nround 2\nsay listed","kernel_tools":["nexus.models.list"]}},` +
			`{"model":{"key":"second","model":"mock/scripted","prompt":"!mock\nround 1\nsay second"}}],"approval_mode":"bypass"}`)
		run := c.Run.PublicID
		if got := h.task(run, "second").After; !reflect.DeepEqual(got, []string{"first"}) {
			t.Fatalf("second waits on %v before the expansion", got)
		}
		cl, err := h.e.ClaimKernel(h.ctx)
		if err != nil || cl == nil || cl.Key != "first" {
			t.Fatalf("claim of the first round: %+v, %v", cl, err)
		}
		if err := h.e.Evaluate(h.ctx, cl); err != nil {
			t.Fatal(err)
		}
		if got := h.task(run, "first").Status; got != runs.StatusCompleted {
			t.Fatalf("the expanded round is %s", got)
		}
		second := h.task(run, "second")
		if !reflect.DeepEqual(second.After, []string{"r2"}) || second.Status != runs.StatusWaiting {
			t.Fatalf("after the expansion second is %s waiting on %v, want waiting on the continuation r2", second.Status, second.After)
		}
		h.drain()
		if d := h.run(run); d.Status != runs.RunCompleted {
			t.Fatalf("run %s", d.Status)
		}
		cont, second := h.task(run, "r2"), h.task(run, "second")
		if cont.CompletedAt == nil || second.StartedAt == nil || *second.StartedAt < *cont.CompletedAt {
			t.Fatalf("second started at %v, before its continuation completed at %v", second.StartedAt, cont.CompletedAt)
		}
	})
}
