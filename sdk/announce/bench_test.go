package announce

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseAnnouncement measures the announcement door: the example body of docs/api.md, and
// 512 model-facing tools (description and schema each) with 256 documents, close to a realistic
// worst case under the 1 MiB body bound.
func BenchmarkParseAnnouncement(b *testing.B) {
	tools := make([]string, MaxTools)
	for i := range tools {
		tools[i] = tool(fmt.Sprintf("tool_%d", i), `"timeout_ms":60000`,
			`"description":"`+strings.Repeat("d", 600)+`"`,
			`"input_schema":{"type":"object","properties":{"path":{"type":"string","description":"a path"}},"required":["path"]}`)
	}
	docs := make([]string, MaxDocuments)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"name":"doc-%d","description":"How to do thing %d."}`, i, i)
	}
	full := []byte(`{"tools":[` + strings.Join(tools, ",") + `],"environment":{"os":"linux"},"documents":[` + strings.Join(docs, ",") + `]}`)
	if len(full) > MaxBodyBytes {
		b.Fatalf("benchmark body is %d bytes, over the bound", len(full))
	}
	for _, bc := range []struct {
		name string
		body []byte
	}{{"spec_example", []byte(specAnnDoc)}, {"512_tools", full}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, r := ParseAnnouncement(bc.body); r != nil {
					b.Fatal(r)
				}
			}
		})
	}
}
