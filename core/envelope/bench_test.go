package envelope

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkValidate measures the envelope on the commit door's hot path: the example commit (two
// blocks, structured content, title, checkpoint), and a result at the 1 MiB bound.
func BenchmarkValidate(b *testing.B) {
	spec, err := os.ReadFile("testdata/golden/spec-commit.json")
	if err != nil {
		b.Fatal(err)
	}
	large := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("word ", (MaxResultBytes-80)/5) + `"}],"structured_content":{"ok":true}}`)
	blocks := make([]string, MaxContentBlocks)
	for i := range blocks {
		blocks[i] = `{"type":"text","text":"line of output"}`
	}
	many := []byte(`{"content":[` + strings.Join(blocks, ",") + `]}`)
	for _, bc := range []struct {
		name string
		body []byte
	}{{"spec_commit", spec}, {"one_MiB_text", large}, {"256_blocks", many}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				r, err := validateBody(bc.body, ownAll)
				if err != nil {
					b.Fatal(err)
				}
				_ = r.Output(isMediaUpload)
			}
		})
	}
}
