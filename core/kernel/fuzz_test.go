package kernel

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzToolSearch: for any query and limit, the trigram index answers exactly what the naive
// scan answers, and the answer is one JSON object of the result shape.
func FuzzToolSearch(f *testing.F) {
	set, catalog := syntheticSet(f, 120, 3)
	ix, err := BuildSearchIndex(set, catalog)
	if err != nil {
		f.Fatal(err)
	}
	fix := newFixture(f).index(f)
	for _, s := range []string{"build", "tool_0007_read", "DEPLOY logs", "0190a5e2 skill", "é", "  ", "a b c", "skill-1"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, q string, limit int) {
		limit = 1 + (limit%MaxSearchLimit+MaxSearchLimit)%MaxSearchLimit
		for _, x := range []*SearchIndex{ix, fix} {
			got, want := x.Search(q, limit), x.Scan(q, limit)
			if !bytes.Equal(got, want) {
				t.Fatalf("%q limit %d:\nindex %s\n scan %s", q, limit, got, want)
			}
			var a searchAnswer
			if err := json.Unmarshal(got, &a); err != nil || len(a.Tools) > limit {
				t.Fatalf("%q: %s (%v)", q, got, err)
			}
		}
	})
}
