package runs_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// pairingScript is the example with memory_read (docs/mock.md#examples), a kernel tool, in
// read_file's place, so that the two good calls run here.
func pairingScript(finish string) string {
	id := strings.Repeat("X", 200)
	return "Exercise the pairing law.\n!mock\nround 1\ncall memory_read {\"path\": \"workspace/a.txt\"}\ncall memory_read {\"path\":\n" +
		"call no_such_tool {}\nbigcall memory_read 70000\ncall memory_read#" + id + " {\"path\": \"workspace/b.txt\"}\nfinish " + finish +
		"\nround 2\nsay {{last_result}}"
}

// TestPairingLawExample drives docs/mock.md#examples end to end: every call gets a row, the refused
// ones born failed with their words, the long id replaced, and the continuation reads five tool
// entries.
func TestPairingLawExample(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		for _, finish := range []string{"tool_calls", "length"} {
			c := h.create(modelStep(pairingScript(finish), memoryTools))
			h.drain()
			id := c.Run.PublicID
			r := h.run(id)
			keys := []string{}
			for _, tk := range r.Tasks {
				keys = append(keys, tk.Key)
			}
			if strings.Join(keys, ",") != "s1-model-1,r2t0,r2t1,r2t2,r2t3,r2t4,r2" {
				t.Fatalf("rows %v", keys)
			}
			want := map[string]string{"r2t1": runs.KeyInvalidToolArguments, "r2t2": runs.KeyUnknownTool, "r2t3": runs.KeyToolInputTooLarge}
			if finish == "length" {
				want["r2t1"] = runs.KeyTruncatedToolArguments
			}
			for k, key := range want {
				tk := h.task(id, k)
				if tk.Status != runs.StatusFailed || tk.Error == nil || tk.Error.Key != key {
					t.Errorf("%s (%s): %s %+v, want failed %s", k, finish, tk.Status, tk.Error, key)
				}
			}
			// The two good calls ran: memory answers an error result the model reads; the refused
			// ones keep no input.
			for k, text := range map[string]string{"r2t0": "memory_not_found: workspace/a.txt", "r2t4": "memory_not_found: workspace/b.txt"} {
				tk := h.task(id, k)
				if tk.Status != runs.StatusCompleted || !deref(tk.IsError) || deref(tk.Output) != text {
					t.Errorf("%s: %s is_error=%v output %q", k, tk.Status, deref(tk.IsError), deref(tk.Output))
				}
			}
			if in := h.task(id, "r2t0").ToolInput; in == nil || string(*in) != `{"path": "workspace/a.txt"}` {
				t.Errorf("r2t0 input %s", deref(in))
			}
			for _, k := range []string{"r2t1", "r2t2", "r2t3"} {
				if in := h.task(id, k).ToolInput; in == nil || string(*in) != "null" {
					t.Errorf("%s input %s, want null", k, deref(in))
				}
			}
			r2t4 := h.task(id, "r2t4")
			if r2t4.ToolCallID == nil || !strings.HasPrefix(*r2t4.ToolCallID, "kc_") {
				t.Errorf("r2t4 pairing key %v", r2t4.ToolCallID)
			}
			if r.Status != runs.RunCompleted {
				t.Fatalf("run %s", r.Status)
			}
			req, err := h.conv.ReadRequest(h.ctx, h.actor, id, "r2")
			if err != nil {
				t.Fatal(err)
			}
			var sealed struct {
				Request struct {
					Entries []struct {
						Role       string `json:"role"`
						ToolCallID string `json:"tool_call_id"`
						IsError    bool   `json:"is_error"`
						Content    []struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"entries"`
				} `json:"request"`
			}
			if err := json.Unmarshal(req, &sealed); err != nil {
				t.Fatal(err)
			}
			var tools, useErrors int
			for _, en := range sealed.Request.Entries {
				if en.Role == "tool" {
					tools++
					if !en.IsError {
						t.Errorf("tool entry %+v", en)
					}
					if strings.HasPrefix(en.Content[0].Text, "<tool_use_error>") {
						useErrors++
					}
				}
			}
			if tools != 5 || useErrors != 3 {
				t.Fatalf("%d tool entries (%d tool_use_error), want 5 (3)", tools, useErrors)
			}
			// The sealed entry keeps the provider's own (long) id, not the replacement key.
			last := sealed.Request.Entries[len(sealed.Request.Entries)-1]
			if last.ToolCallID != strings.Repeat("X", 200) {
				t.Errorf("last tool entry id %q", last.ToolCallID)
			}
			if r.Answer == nil || *r.Answer != last.Content[0].Text {
				t.Errorf("answer %v, want the last result %q", r.Answer, last.Content[0].Text)
			}
		}
	})
}
