package envelope

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// render describes everything a result stores and projects, one field a line, so that a
// golden file shows a reviewer the whole normalisation at a glance.
func render(r *Result) string {
	var b strings.Builder
	line := func(k, v string) { fmt.Fprintf(&b, "%s: %s\n", k, v) }
	orAbsent := func(raw []byte) string {
		if raw == nil {
			return "(absent)"
		}
		return string(raw)
	}
	line("stored content", orAbsent(r.ContentJSON()))
	line("structured_content", orAbsent(r.StructuredContent))
	line("is_error", strconv.FormatBool(r.IsError))
	line("outcome", string(r.Outcome))
	if r.Title == "" {
		line("title", "(absent)")
	} else {
		line("title", strconv.Quote(r.Title))
	}
	line("metadata", orAbsent(r.Metadata))
	cp, ok := r.Checkpoint()
	if !ok {
		cp = nil
	}
	line("checkpoint", orAbsent(cp))
	line("uploads", fmt.Sprint(r.Uploads))
	line("output", strconv.Quote(r.Output(isMediaUpload)))
	line("output, no media", strconv.Quote(r.Output(nil)))
	var media []string
	for _, l := range MediaLinks(r.Content, isMediaUpload) {
		media = append(media, l.Name)
	}
	line("media links", fmt.Sprint(media))
	detail, ok := FailureDetail(r.Output(isMediaUpload))
	if ok {
		line("failure detail", strconv.Quote(detail))
	} else {
		line("failure detail", "(absent)")
	}
	return b.String()
}

// TestGolden runs every body in testdata/golden through Validate and compares the stored form
// and projections with NAME.golden; `go test -run TestGolden -update` rewrites them.
func TestGolden(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob("testdata/golden/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			r, err := validateBody(body, ownAll)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			got := render(r)
			goldenPath := strings.TrimSuffix(in, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", goldenPath, diff)
			}
		})
	}
}
