package memorypostgres_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	memorypostgres "github.com/nexuskernel/nexus/providers/memory-postgres"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

// benchDocs fills one anchor to the cap, the most a grep ever reads.
const benchDocs = memory.MaxDocumentsPerAnchor

// BenchmarkB11 compares the store with the raw SQL it stands on, side by side in one run: the
// same statements issued directly through the same pool, without the store's validation,
// conversion and error mapping. Read is one SELECT; write replaces a document in the store's
// transaction (statement timeout, anchor upsert and lock, version read, conditional update);
// grep reads the anchor's documents in name order and matches each line with Go's regexp.
func BenchmarkB11(b *testing.B) {
	s, err := memorypostgres.Open(context.Background(), memorypostgres.Config{DSN: dsn(b), Schema: freshSchema(b), MaxOpenConns: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	ctx := context.Background()
	scope := memorytest.Workspace
	line := "the quick brown fox jumps over the lazy dog\n"
	content := strings.Repeat(line, 40)
	for i := range benchDocs {
		if _, err := s.Write(ctx, &memory.WriteRequest{Scope: scope, Name: fmt.Sprintf("doc-%02d.md", i), Content: content, WrittenAt: memorytest.T0}); err != nil {
			b.Fatal(err)
		}
	}
	db, schema := s.DB(), s.Schema()
	readSQL := `SELECT name, content, size_bytes, written_at, version FROM ` + schema + `.documents WHERE scope_kind = $1 AND owner_id = $2 AND name = $3`
	grepSQL := `SELECT name, content FROM ` + schema + `.documents WHERE scope_kind = $1 AND owner_id = $2 AND name LIKE $3 ESCAPE '\' ORDER BY name`

	b.Run("read/store", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Read(ctx, &memory.ReadRequest{Scope: scope, Name: "doc-07.md"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read/raw", func(b *testing.B) {
		for b.Loop() {
			var row struct {
				Name      string    `db:"name"`
				Content   string    `db:"content"`
				SizeBytes int64     `db:"size_bytes"`
				WrittenAt time.Time `db:"written_at"`
				Version   uint64    `db:"version"`
			}
			if err := db.GetContext(ctx, &row, readSQL, scope.Kind, scope.OwnerID, "doc-07.md"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write/store", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Write(ctx, &memory.WriteRequest{Scope: scope, Name: "doc-03.md", Content: content, WrittenAt: memorytest.T0}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write/raw", func(b *testing.B) {
		for b.Loop() {
			tx, err := db.BeginTxx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			var count int
			var version uint64
			_, err = tx.ExecContext(ctx, `SET LOCAL statement_timeout = 5000`)
			if err == nil {
				_, err = tx.ExecContext(ctx, `INSERT INTO `+schema+`.anchors (scope_kind, owner_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, scope.Kind, scope.OwnerID)
			}
			if err == nil {
				err = tx.GetContext(ctx, &count, `SELECT doc_count FROM `+schema+`.anchors WHERE scope_kind = $1 AND owner_id = $2 FOR UPDATE`, scope.Kind, scope.OwnerID)
			}
			if err == nil {
				err = tx.GetContext(ctx, &version, `SELECT version FROM `+schema+`.documents WHERE scope_kind = $1 AND owner_id = $2 AND name = $3`, scope.Kind, scope.OwnerID, "doc-04.md")
			}
			if err == nil {
				err = tx.GetContext(ctx, &version, `UPDATE `+schema+`.documents SET content = $4, size_bytes = $5, version = version + 1, written_at = $6
					WHERE scope_kind = $1 AND owner_id = $2 AND name = $3 AND version = $7 RETURNING version`, scope.Kind, scope.OwnerID, "doc-04.md", content, len(content), memorytest.T0, version)
			}
			if err == nil {
				err = tx.Commit()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("grep/store", func(b *testing.B) {
		for b.Loop() {
			resp, err := s.Grep(ctx, &memory.GrepRequest{Scope: scope, Pattern: "lazy cat", Limit: 100})
			if err != nil || len(resp.Matches) != 0 {
				b.Fatal(err)
			}
		}
	})
	b.Run("grep/raw", func(b *testing.B) {
		re := regexp.MustCompile("lazy cat")
		for b.Loop() {
			rows, err := db.QueryxContext(ctx, grepSQL, scope.Kind, scope.OwnerID, "%")
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var name, c string
				if err := rows.Scan(&name, &c); err != nil {
					b.Fatal(err)
				}
				for l := range strings.SplitSeq(c, "\n") {
					if re.MatchString(l) {
						n++
					}
				}
			}
			_ = rows.Close()
			if n != 0 {
				b.Fatal("matched " + strconv.Itoa(n))
			}
		}
	})
}
