package declare

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// outcomeBytes is the content of a <id>.out.json file: the stored set, or the refusal with
// its unprefixed path.
func outcomeBytes(t *testing.T, set *Set, err error) []byte {
	t.Helper()
	if err != nil {
		r := refusalOf(t, err)
		var b bytes.Buffer
		b.WriteString(`{"refusal":{"word":`)
		b.Write(mustMarshal(r.Word))
		b.WriteString(`,"path":`)
		b.Write(mustMarshal(r.Path))
		b.WriteString("}}\n")
		return b.Bytes()
	}
	return append(append([]byte(`{"stored":`), set.Bytes()...), "}\n"...)
}

func mustMarshal(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// TestGoldenCompile runs every worked example of the compile table
// (docs/development.md#the-declaration-compiler) from testdata/golden: <id>.in.json is the authored
// list, <id>.out.json the stored set or the refusal. Every lawful row also re-compiles its stored
// bytes to themselves and validates them.
func TestGoldenCompile(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	inputs, err := filepath.Glob("testdata/golden/C*.in.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	sort.Strings(inputs)
	for _, in := range inputs {
		id := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			raw := expandInput(readFile(t, in))
			set, err := c.Compile(raw)
			got := outcomeBytes(t, set, err)
			compareGolden(t, strings.TrimSuffix(in, ".in.json")+".out.json", got)
			if err != nil {
				return
			}
			stored := set.Bytes()
			again, err := c.Compile(stored)
			if err != nil {
				t.Fatalf("the stored set does not re-compile: %v", err)
			}
			if !bytes.Equal(again.Bytes(), stored) {
				t.Errorf("re-compiling the stored set changed it:\n%s\n%s", stored, again.Bytes())
			}
			if err := c.Validate(stored); err != nil {
				t.Errorf("the stored set does not validate: %v", err)
			}
		})
	}
}
