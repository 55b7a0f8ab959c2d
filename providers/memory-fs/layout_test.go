package memoryfs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/memory"
)

// TestHeaderRoundTrip: every header encodeDoc writes decodes to the same entry, through the
// fast path when the name needs no escape and through encoding/json otherwise.
func TestHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, c := range []struct {
		name string
		fast bool
	}{
		{"notes.md", true},
		{"日本語/メモ 🎉", true},
		{"<&>", true},
		{`quote"d`, false},
		{"line\u2028sep", false},
		{strings.Repeat("n", memory.MaxNameBytes), true},
	} {
		for _, id := range []string{"", memory.NewID()} {
			e := memory.Entry{Name: c.name, SizeBytes: 5, WrittenAt: at, Version: 12345678901234, ID: id}
			data := encodeDoc(e, "hello")
			line := data[:bytes.IndexByte(data, '\n')]
			h, ok := parseHeaderFast(line)
			if ok != c.fast {
				t.Errorf("%q: fast path %v, want %v", c.name, ok, c.fast)
			}
			var viaJSON header
			if err := json.Unmarshal(line, &viaJSON); err != nil {
				t.Fatal(err)
			}
			if ok {
				if diff := cmp.Diff(viaJSON, h); diff != "" {
					t.Errorf("%q: fast path disagrees with encoding/json (-json +fast):\n%s", c.name, diff)
				}
			}
			got, content, err := decodeDoc(docFileName(c.name), data, false)
			if err != nil || string(content) != "hello" {
				t.Fatalf("%q: decode: %v", c.name, err)
			}
			if diff := cmp.Diff(e, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", c.name, diff)
			}
		}
	}
	// Near misses of the exact shape fall back rather than misread.
	for _, line := range []string{
		`{"format":1,"name":"a","size_bytes":05,"version":1,"written_at":"2030-01-02T03:04:05.000006Z"}`,
		`{"format":1,"name":"a","size_bytes":5,"version":1,"written_at":"2030-01-02T03:04:05.000006Z","extra":1}`,
		`{"format":1,"name":"a","version":1,"size_bytes":5,"written_at":"2030-01-02T03:04:05.000006Z"}`,
		`{"format":1,"name":"a","size_bytes":99999999999999999999,"version":1,"written_at":"x"}`,
		`{"format":1,"name":"a","size_bytes":70000,"version":1,"written_at":"2030-01-02T03:04:05.000006Z"}`,
		`{"format":2,"name":"a","size_bytes":5,"version":1,"written_at":"2030-01-02T03:04:05.000006Z"}`,
	} {
		if _, ok := parseHeaderFast([]byte(line)); ok {
			t.Errorf("fast path accepted %s", line)
		}
	}
}

func FuzzParseHeaderFast(f *testing.F) {
	f.Add([]byte(`{"format":1,"name":"a","size_bytes":5,"version":1,"written_at":"2030-01-02T03:04:05.000006Z"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		h, ok := parseHeaderFast(line)
		if !ok {
			return
		}
		var viaJSON header
		if err := json.Unmarshal(line, &viaJSON); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses: %q: %v", line, err)
		}
		if h != viaJSON {
			t.Fatalf("fast path %+v, encoding/json %+v for %q", h, viaJSON, line)
		}
	})
}
