package declaretest

import (
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/refusal"
)

// Refused is what a test reads of a refusal rooted at the declaration (core/declare's package
// documentation): the word, the request field, the unprefixed path ("" for a refusal of the
// assembled set) and the acceptance facts.
type Refused struct {
	Word     string
	Field    string
	Path     string
	Callable string
	RunnerID string
	ToolName string
}

// factKeys are the extra keys a refusal rooted at the declaration may carry, in their order.
var factKeys = []string{"field", "callable", "runner_executor_public_id", "tool_name"}

// RefusalOf fails t unless err is a refusal rooted at the declaration, and returns what it says.
func RefusalOf(t testing.TB, err error) Refused {
	t.Helper()
	r, ok := refusal.As(err)
	if !ok {
		t.Fatalf("error %v is not a refusal", err)
	}
	if r.Kind != refusal.Unprocessable || r.Code == "" || r.Message == "" || len(r.Errors) != 1 || r.Errors[0].Code != r.Code {
		t.Fatalf("refusal %#v is not rooted at the declaration", r)
	}
	facts := map[string]string{}
	next := 0
	for _, f := range r.Extra {
		s, isString := f.Value.(string)
		for next < len(factKeys) && factKeys[next] != f.Key {
			next++
		}
		if next == len(factKeys) || !isString || s == "" {
			t.Fatalf("refusal %s: extra %q = %#v is not a located fact in order", r.Code, f.Key, f.Value)
		}
		facts[f.Key] = s
	}
	out := Refused{Word: r.Code, Field: facts["field"], Path: r.Errors[0].Path, Callable: facts["callable"],
		RunnerID: facts["runner_executor_public_id"], ToolName: facts["tool_name"]}
	if r.Errors[0].Name != out.ToolName || r.Errors[0].Message != "" {
		t.Fatalf("refusal %s: problem %#v disagrees with its facts", r.Code, r.Errors[0])
	}
	if out.Path != "" && !strings.HasPrefix(out.Path, out.Field) {
		t.Fatalf("refusal %s: path %q is not inside field %q", r.Code, out.Path, out.Field)
	}
	return out
}
