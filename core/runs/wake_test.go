package runs

import (
	"testing"
)

// The wake-up handler kicks a worker for a kernel wake-up, whatever its run and key hold, and
// for nothing else on the channel: an executor's wake-up, a kernel wake-up's words inside
// another payload's string, a payload that is not JSON.
func TestWakeHandlerKicksOnKernelWakeUpsOnly(t *testing.T) {
	cases := []struct {
		payload string
		kicks   int
	}{
		{kernelWake("0b7e3c1a-52a4-4c8e-9d43-3f0f1b6f3a10", "step-1"), 1},
		{kernelWake(`r"q`, `{"kind":"kernel"}`), 1},
		{`{"kind":"executor","run_public_id":"r","task_key":"k","executor_public_ids":["e"],"event":"work_available","tool_name":"t","origin":"o"}`, 0},
		{`{"kind":"executor","run_public_id":"r","task_key":"{\"kind\":\"kernel\"}","executor_public_ids":[],"event":"work_available","origin":"o"}`, 0},
		{`{"kind":"kernel"`, 0},
		{`not json`, 0},
	}
	for _, c := range cases {
		e := &Engine{kick: make(chan struct{}, 4)}
		wakeHandler{e}.Notified(c.payload)
		if got := len(e.kick); got != c.kicks {
			t.Errorf("%s: %d kicks; want %d", c.payload, got, c.kicks)
		}
	}
}
