package store_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := storetest.OpenUnmigrated(t, d)
			if err := s.CheckSchema(ctx); err == nil {
				t.Fatal("CheckSchema on an empty database: want pending migrations, got nil")
			}
			applied, err := s.Migrate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(applied) == 0 {
				t.Fatal("first Migrate applied nothing")
			}
			again, err := s.Migrate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(again) != 0 {
				t.Fatalf("second Migrate applied %v, want nothing", again)
			}
			if err := s.CheckSchema(ctx); err != nil {
				t.Fatalf("CheckSchema after Migrate: %v", err)
			}
			st, err := s.MigrationStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range st {
				if !m.Applied || m.AppliedAt == 0 {
					t.Errorf("migration %d (%s) not reported applied", m.Version, m.Source)
				}
			}
		})
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := storetest.Open(t, d)
			_, known, err := s.SchemaVersions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// A newer build applied one more migration.
			if _, err := s.DB().ExecContext(ctx, rebind(d,
				`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)`), known+1, true); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Migrate(ctx); !errors.Is(err, store.ErrSchemaTooNew) {
				t.Fatalf("Migrate on a newer schema: got %v, want ErrSchemaTooNew", err)
			}
			if err := s.CheckSchema(ctx); !errors.Is(err, store.ErrSchemaTooNew) {
				t.Fatalf("CheckSchema on a newer schema: got %v, want ErrSchemaTooNew", err)
			}
		})
	}
}

func rebind(d store.Dialect, q string) string {
	if d != store.Postgres {
		return q
	}
	n := 0
	var b strings.Builder
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$")
			b.WriteString(string(rune('0' + n)))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// TestDialectParity keeps the two dialects' schemas equal in tables, columns and nullability. The
// migration files of both dialects are compared as text always; each live database this run can
// reach is compared with them.
func TestDialectParity(t *testing.T) {
	t.Parallel()
	static := map[store.Dialect][]store.Column{}
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		static[d] = parseMigrations(t, filepath.Join("migrations", string(d)))
		if len(static[d]) == 0 {
			t.Fatalf("no columns parsed from %s migrations", d)
		}
	}
	if diff := cmp.Diff(static[store.SQLite], static[store.Postgres]); diff != "" {
		t.Errorf("migration files differ between dialects (-sqlite +postgres):\n%s", diff)
	}
	for _, d := range storetest.Dialects() {
		s := storetest.Open(t, d)
		live, err := s.Columns(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(static[d], live); diff != "" {
			t.Errorf("%s live schema differs from its migration files (-files +live):\n%s", d, diff)
		}
	}
}

var (
	createTable = regexp.MustCompile(`^CREATE TABLE (\w+) \($`)
	columnLine  = regexp.MustCompile(`^\s+([a-z_][a-z0-9_]*)\s+([A-Z]+)`)
	addColumn   = regexp.MustCompile(`^ALTER TABLE (\w+) ADD COLUMN ([a-z_][a-z0-9_]*) (.*);$`)
	dropTable   = regexp.MustCompile(`^DROP TABLE (\w+);$`)
)

// parseMigrations reads the Up sections of a dialect's migration files in order. The files keep a
// disciplined layout (one column per line inside CREATE TABLE; ALTER TABLE … ADD COLUMN on one
// line) so that this reader stays small.
func parseMigrations(t *testing.T, dir string) []store.Column {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		up, table := false, ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "-- +goose Up"):
				up = true
				continue
			case strings.HasPrefix(line, "-- +goose Down"):
				up = false
				continue
			}
			if !up {
				continue
			}
			if m := createTable.FindStringSubmatch(line); m != nil {
				table = m[1]
				cols[table] = map[string]bool{}
				continue
			}
			if table != "" {
				if strings.HasPrefix(line, ");") {
					table = ""
					continue
				}
				m := columnLine.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				switch m[1] {
				case "primary", "unique", "check", "foreign", "constraint":
					continue
				}
				nullable := !strings.Contains(line, "NOT NULL") && !strings.Contains(line, "PRIMARY KEY")
				cols[table][m[1]] = nullable
				continue
			}
			if m := addColumn.FindStringSubmatch(line); m != nil {
				cols[m[1]][m[2]] = !strings.Contains(m[3], "NOT NULL")
			}
			if m := dropTable.FindStringSubmatch(line); m != nil {
				delete(cols, m[1])
			}
		}
		_ = f.Close()
	}
	var out []store.Column
	for tbl, cs := range cols {
		for c, n := range cs {
			out = append(out, store.Column{Table: tbl, Name: c, Nullable: n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Table != out[j].Table {
			return out[i].Table < out[j].Table
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// TestWriteRelaxed: a relaxed write commits like any other and rolls back on an error; only its
// own transaction runs without waiting for the flush (PostgreSQL synchronous_commit off, SQLite
// synchronous NORMAL), and every ordinary write after it is synchronous again.
func TestWriteRelaxed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		setting := `SHOW synchronous_commit`
		relaxed, durable := "off", "on"
		if s.Dialect() == store.SQLite {
			setting, relaxed, durable = `PRAGMA synchronous`, "1", "2" // NORMAL, FULL
		}
		read := func(tx *store.Tx) string {
			var v string
			if err := tx.Get(ctx, &v, setting); err != nil {
				t.Fatal(err)
			}
			return v
		}
		w := &store.Workspace{PublicID: store.NewPublicID(), Handle: "relaxed", Name: "R"}
		err := s.WriteRelaxed(ctx, func(tx *store.Tx) error {
			if got := read(tx); got != relaxed {
				t.Errorf("inside a relaxed write: %s = %s, want %s", setting, got, relaxed)
			}
			return store.InsertWorkspace(ctx, tx, w)
		})
		if err != nil {
			t.Fatal(err)
		}
		refused := errors.New("refused")
		if err := s.WriteRelaxed(ctx, func(tx *store.Tx) error {
			if err := store.InsertWorkspace(ctx, tx, &store.Workspace{PublicID: store.NewPublicID(), Handle: "rolled", Name: "R"}); err != nil {
				return err
			}
			return refused
		}); !errors.Is(err, refused) {
			t.Fatalf("a failing relaxed write: %v", err)
		}
		for range 3 {
			if err := s.Write(ctx, func(tx *store.Tx) error {
				if got := read(tx); got != durable {
					t.Errorf("an ordinary write after relaxed ones: %s = %s, want %s", setting, got, durable)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		var handles []string
		if err := s.Reader().Select(ctx, &handles, `SELECT handle FROM workspaces WHERE handle IN ('relaxed', 'rolled')`); err != nil {
			t.Fatal(err)
		}
		if len(handles) != 1 || handles[0] != "relaxed" {
			t.Fatalf("workspaces after the writes: %v", handles)
		}
	})
}
