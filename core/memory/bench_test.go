package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

// BenchmarkStores measures the kernel store on each dialect beside memory-fs (durable, its
// production setting) in one run, on one full anchor of 64 documents of about 1 KiB: a replace,
// a read, an edit, a listing and a literal grep that matches one line. The ratios against
// memory-fs, and against select-1 (one trivial query through the same pool), are what to
// compare; absolute times depend on the machine.
func BenchmarkStores(b *testing.B) {
	stores := map[string]func(b *testing.B) memsdk.Provider{
		"memory-fs": func(b *testing.B) memsdk.Provider {
			p, err := memoryfs.Open(context.Background(), memoryfs.Config{Root: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = p.Close() })
			return p
		},
	}
	for _, d := range storetest.Dialects() {
		stores["kernel-"+string(d)] = func(b *testing.B) memsdk.Provider {
			r := openFresh(b, d)
			// The floor: one trivial query through the same pool.
			b.Run("select-1", func(b *testing.B) {
				var n int
				for b.Loop() {
					if err := r.db.Reader().Get(context.Background(), &n, `SELECT 1`); err != nil {
						b.Fatal(err)
					}
				}
			})
			return r.Store
		}
	}
	for _, name := range []string{"memory-fs", "kernel-sqlite", "kernel-postgres"} {
		open, ok := stores[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) { benchStore(b, open(b)) })
	}
}

func benchContent(i int) string {
	var s strings.Builder
	for line := range 20 {
		fmt.Fprintf(&s, "- note %d.%d: the retry budget stays at %d until review\n", i, line, line%7)
	}
	if i == 37 {
		s.WriteString("found needle-7f3a here\n")
	}
	return s.String()
}

func benchStore(b *testing.B, p memsdk.Provider) {
	ctx := context.Background()
	ws := memorytest.Workspace
	// 63 notes and the counter the edits advance: a full anchor.
	for i := range memsdk.MaxDocumentsPerAnchor - 1 {
		if _, err := p.Write(ctx, &memsdk.WriteRequest{Scope: ws, Name: fmt.Sprintf("notes/doc-%02d.md", i), Content: benchContent(i), WrittenAt: memorytest.T0}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := p.Write(ctx, &memsdk.WriteRequest{Scope: ws, Name: "counter", Content: "n=0", WrittenAt: memorytest.T0}); err != nil {
		b.Fatal(err)
	}
	doc := "notes/doc-10.md"
	b.Run("replace", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := p.Write(ctx, &memsdk.WriteRequest{Scope: ws, Name: doc, Content: benchContent(i), WrittenAt: memorytest.T0}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Read(ctx, &memsdk.ReadRequest{Scope: ws, Name: doc}); err != nil {
				b.Fatal(err)
			}
		}
	})
	edits := 0
	b.Run("edit", func(b *testing.B) {
		for b.Loop() {
			i := edits
			edits++
			if _, err := p.Edit(ctx, &memsdk.EditRequest{Scope: ws, Name: "counter", OldText: fmt.Sprintf("n=%d", i), NewText: fmt.Sprintf("n=%d", i+1), WrittenAt: memorytest.T0}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ls", func(b *testing.B) {
		for b.Loop() {
			if resp, err := p.Ls(ctx, &memsdk.LsRequest{Scope: ws}); err != nil || len(resp.Entries) != memsdk.MaxDocumentsPerAnchor {
				b.Fatal(err)
			}
		}
	})
	b.Run("grep", func(b *testing.B) {
		for b.Loop() {
			if resp, err := p.Grep(ctx, &memsdk.GrepRequest{Scope: ws, Pattern: "needle-7f3a", Limit: 100}); err != nil || len(resp.Matches) != 1 {
				b.Fatal(err)
			}
		}
	})
}
