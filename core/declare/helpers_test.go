package declare

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/declare/declaretest"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// update rewrites the golden files from the current code: go test ./core/declare -update.
var update = flag.Bool("update", false, "rewrite golden files")

// fixture is the compiler over the fixture registry of the worked examples.
func fixture(t testing.TB) *Compiler {
	t.Helper()
	c, err := New(declaretest.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// repeatMacro lets a golden input hold a long string without a long file:
// "$REPEAT(x,1048576)" is 1,048,576 x characters.
var repeatMacro = regexp.MustCompile(`\$REPEAT\(([^,]),(\d+)\)`)

func expandInput(raw []byte) []byte {
	return repeatMacro.ReplaceAllFunc(raw, func(m []byte) []byte {
		sub := repeatMacro.FindSubmatch(m)
		n, _ := strconv.Atoi(string(sub[2]))
		return bytes.Repeat(sub[1], n)
	})
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compareGolden checks got against the golden file, or rewrites it under -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readFile(t, path)
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update to accept):\n%s", path, cmp.Diff(pretty(want), pretty(got)))
	}
}

// pretty indents JSON lines for a readable diff; other text is returned as it is.
func pretty(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

func mustDecode(t testing.TB, s string) jsonwire.Value {
	t.Helper()
	v, err := jsonwire.DecodeText(s)
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// refusalOf asserts err is a refusal rooted at the declaration and reads it.
func refusalOf(t testing.TB, err error) declaretest.Refused {
	t.Helper()
	return declaretest.RefusalOf(t, err)
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return strings.TrimSpace(s)
}

func docOf(name, description string) announce.Document {
	return announce.Document{Name: name, Description: description}
}
