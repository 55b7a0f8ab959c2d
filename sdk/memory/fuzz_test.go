package memory

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzIntegerValue checks the integer rule against exact rational arithmetic for every JSON
// number with a modest exponent.
func FuzzIntegerValue(f *testing.F) {
	for _, s := range []string{"5", "5.0", "-0", "1e3", "0.5e1", "5.5", "9223372036854775808", "1e-2", "05", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := integerValue(s)
		var n json.Number
		isNumber := s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Unmarshal([]byte(s), &n) == nil
		if !isNumber || strings.TrimSpace(s) != s {
			if ok {
				t.Fatalf("integerValue(%q) accepted a non-number", s)
			}
			return
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			if e, err := strconv.Atoi(s[i+1:]); err != nil || e > 400 || e < -400 {
				return // big.Rat would expand the exponent; the table test covers these
			}
		}
		r, valid := new(big.Rat).SetString(s)
		if !valid {
			t.Fatalf("big.Rat rejects JSON number %q", s)
		}
		if ok != r.IsInt() {
			t.Fatalf("integerValue(%q) integral = %v, exact = %v", s, ok, r.IsInt())
		}
		if !ok {
			return
		}
		want := r.Num()
		switch {
		case want.Cmp(big.NewInt(math.MaxInt64)) > 0:
			if got != math.MaxInt64 {
				t.Fatalf("integerValue(%q) = %d, want saturation", s, got)
			}
		case want.Cmp(big.NewInt(math.MinInt64)) < 0:
			if got != math.MinInt64 {
				t.Fatalf("integerValue(%q) = %d, want saturation", s, got)
			}
		case want.Int64() != got:
			t.Fatalf("integerValue(%q) = %d, want %d", s, got, want.Int64())
		}
	})
}

// naiveSlice is memory_read's line slicing (docs/agent-tools.md#memory-and-skills) written
// literally.
func naiveSlice(content string, offset, limit int64) string {
	var lines []string
	for rest := content; rest != ""; {
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			lines, rest = append(lines, rest), ""
		} else {
			lines, rest = append(lines, rest[:i+1]), rest[i+1:]
		}
	}
	if offset < 1 {
		offset = 1
	}
	limit = min(max(limit, 1), MaxReadLines)
	if offset-1 >= int64(len(lines)) {
		lines = nil
	} else {
		lines = lines[offset-1:]
	}
	y := int64(len(lines))
	x := min(limit, y)
	shown := strings.Join(lines[:x], "")
	if x == y {
		return shown
	}
	return shown + "\n[Showing " + strconv.FormatInt(x, 10) + " of " + strconv.FormatInt(y, 10) + " lines. Continue with offset=" + strconv.FormatInt(offset+x, 10) + ".]"
}

func FuzzReadSlice(f *testing.F) {
	f.Add("a\nb\nc\n", int64(1), int64(2))
	f.Add("a\nb", int64(2), int64(1))
	f.Add("", int64(-3), int64(0))
	f.Add(strings.Repeat("x\n", 2100), int64(50), int64(5000))
	f.Fuzz(func(t *testing.T, content string, offset, limit int64) {
		if got, want := ReadSlice(content, offset, limit), naiveSlice(content, offset, limit); got != want {
			t.Fatalf("ReadSlice(%q, %d, %d) = %q, want %q", content, offset, limit, got, want)
		}
	})
}

// FuzzMatcher checks that the Matcher, literal shortcuts included, agrees with matching every
// line with the compiled expression.
func FuzzMatcher(f *testing.F) {
	f.Add("alpha\nbeta\r\n", "beta", false, 2, "x\n")
	f.Add("a\nb", "^$", true, 0, "\n\n")
	f.Add("ÉCOLE\n", "école", true, 5, "")
	f.Fuzz(func(t *testing.T, first, pattern string, ignoreCase bool, limit int, second string) {
		if limit < 0 || limit > MaxGrepLimit {
			limit = 3
		}
		re, err := CompilePattern(pattern, ignoreCase)
		if err != nil {
			return
		}
		docs := []doc{{"a", first}, {"b", second}}
		want := naiveGrep(re, docs, limit)
		for _, asBytes := range []bool{false, true} {
			got, err := runMatcher(t, &GrepRequest{Pattern: pattern, IgnoreCase: ignoreCase, Limit: limit}, docs, asBytes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&want, got, cmp.Comparer(func(a, b []Match) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })); diff != "" {
				t.Fatalf("pattern %q bytes %v (-naive +matcher):\n%s", pattern, asBytes, diff)
			}
		}
	})
}
