package conversations

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// TestTaskReadKeepsNullAndFalse: structured_content null and false are served as sent, an absent
// one is absent, and a settled row always has output (docs/api.md#task-error-keys,
// docs/api.md#tasks-and-decisions).
func TestTaskReadKeepsNullAndFalse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		stored *string
		want   string
	}{
		{ptr("null"), `"structured_content":null`},
		{ptr("false"), `"structured_content":false`},
		{ptr(`{"a":1}`), `"structured_content":{"a":1}`},
		{nil, ""},
	}
	for _, c := range cases {
		row := &store.Task{TaskTrace: store.TaskTrace{
			Key: "r2t0", Kind: runs.KindTool, Status: runs.StatusCompleted, Origin: runs.OriginModel,
			OnFailure: runs.OnFailureAbsorb, Lifetime: runs.LifetimeTurn, Wake: runs.WakeAuto,
			Visibility: runs.VisibilityCollapsed, ToolName: ptr("t"), IsError: ptr(false),
		},
			Output: ptr(""), StructuredContent: c.stored, Title: ptr("did it"),
			Metadata: ptr(`{"checkpoint":{"cwd":"/"}}`),
		}
		b, err := json.Marshal(fullDoc(row, nil))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if c.want != "" && !jsonHas(s, c.want) {
			t.Errorf("stored %v: %s lacks %s", c.stored, s, c.want)
		}
		if c.want == "" && jsonHas(s, `"structured_content"`) {
			t.Errorf("absent structured_content served: %s", s)
		}
		for _, k := range []string{`"output":""`, `"is_error":false`, `"title":"did it"`, `"metadata":{"checkpoint":{"cwd":"/"}}`, `"tool_input":null`} {
			if !jsonHas(s, k) {
				t.Errorf("%s lacks %s", s, k)
			}
		}
		if jsonHas(s, `"content"`) {
			t.Errorf("a blank result serves no content: %s", s)
		}
	}
}

func jsonHas(s, sub string) bool { return strings.Contains(s, sub) }
