package runs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckCall(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 129)
	big := `{"data":"` + strings.Repeat("x", 70000-11) + `"}`
	cases := []struct {
		name      string
		call      string
		args      string
		declared  bool
		truncated bool
		key       string
		detail    string
		toolName  string
		input     string
	}{
		{"declared object", "read_file", `{"path":"a.txt"}`, true, false, "", "", "read_file", `{"path":"a.txt"}`},
		{"empty arguments read as {}", "read_file", "", true, false, "", "", "read_file", `{}`},
		{"whitespace arguments read as {}", "read_file", "  \n", true, false, "", "", "read_file", `{}`},
		{"undeclared name", "no_such_tool", `{}`, false, false, KeyUnknownTool, "no_such_tool is not one of this round's tools.", "no_such_tool", ""},
		{"name too long", long, `{}`, true, false, KeyUnknownTool, "The called name is 129 characters long; the bound is 128.", long[:128], ""},
		{"malformed JSON", "read_file", `{"path":`, true, false, KeyInvalidToolArguments, "", "read_file", ""},
		{"array", "read_file", `[1,2]`, true, false, KeyInvalidToolArguments, "The arguments are a JSON array, not an object.", "read_file", ""},
		{"string", "read_file", `"x"`, true, false, KeyInvalidToolArguments, "The arguments are a JSON string, not an object.", "read_file", ""},
		{"null", "read_file", `null`, true, false, KeyInvalidToolArguments, "The arguments are JSON null, not an object.", "read_file", ""},
		{"truncated", "read_file", `{"path":`, true, true, KeyTruncatedToolArguments, "The model ran out of output tokens while writing the arguments.", "read_file", ""},
		{"truncated but valid", "read_file", `{"a":1}`, true, true, "", "", "read_file", `{"a":1}`},
		{"too large", "read_file", big, true, false, KeyToolInputTooLarge, "Arguments are 70000 bytes; the bound is 65536.", "read_file", ""},
		{"NUL in a string", "read_file", `{"a":{"b":["x\u0000"]}}`, true, false, KeyInvalidToolInput, "$.a.b[0] holds a value the store cannot keep.", "read_file", ""},
		{"lone surrogate", "read_file", `{"a":"\ud800x"}`, true, false, KeyInvalidToolInput, "$.a holds a value the store cannot keep.", "read_file", ""},
		{"paired surrogates are fine", "read_file", `{"a":"\ud83d\ude00"}`, true, false, "", "", "read_file", `{"a":"\ud83d\ude00"}`},
		{"number out of range", "read_file", `{"n":1e400}`, true, false, KeyInvalidToolInput, "$.n holds a value the store cannot keep.", "read_file", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := CheckCall(c.call, c.args, c.declared, c.truncated)
			if c.key == "" {
				if v.Error != nil {
					t.Fatalf("born failed: %+v", v.Error)
				}
				if string(v.Input) != c.input {
					t.Fatalf("input %s, want %s", v.Input, c.input)
				}
				return
			}
			if v.Error == nil || v.Error.Key != c.key {
				t.Fatalf("error %+v, want key %s", v.Error, c.key)
			}
			if c.detail != "" && v.Error.Detail != c.detail {
				t.Fatalf("detail %q, want %q", v.Error.Detail, c.detail)
			}
			if len(v.Error.Detail) > ArgumentsDetailBytes {
				t.Fatalf("detail %d bytes, over %d", len(v.Error.Detail), ArgumentsDetailBytes)
			}
			if v.ToolName != c.toolName {
				t.Fatalf("tool name %q, want %q", v.ToolName, c.toolName)
			}
		})
	}
}

func TestPairingKeys(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("X", 129)
	ok128 := strings.Repeat("Y", 128)
	got := PairingKeys("r1", []string{"mock_r1_0", "", long, "mock_r1_0", ok128})
	want := []string{"mock_r1_0", ReplacementKey("r1", 1, ""), ReplacementKey("r1", 2, long), ReplacementKey("r1", 3, "mock_r1_0"), ok128}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	k := ReplacementKey("r1", 4, long)
	if !strings.HasPrefix(k, "kc_") || len(k) != 27 {
		t.Fatalf("replacement key %q: want kc_ and 24 hex digits", k)
	}
	// SHA-256("r1\x004\x00" + 200 X's) pins the derivation.
	if ReplacementKey("r1", 0, "a") == ReplacementKey("r1", 1, "a") || ReplacementKey("r1", 0, "a") == ReplacementKey("r2", 0, "a") {
		t.Fatal("replacement keys must differ by round and index")
	}
	if got := ReplacementKey("r1", 0, "id"); got != "kc_"+sha24("r1\x000\x00id") {
		t.Fatalf("replacement key %s", got)
	}
}

func sha24(s string) string {
	h := sha256Sum([]byte(s))
	return h[:24]
}
