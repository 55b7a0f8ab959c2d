package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// SQL text lives in core/store alone (docs/development.md#how-a-door-reaches-the-store): every
// other package of core reaches the database through the store's named statements. The rule
// covers the non-test, non-generated Go files under core/ outside core/store; the memory-postgres
// provider (a program with a database of its own) and the benchmarks' baselines (SQL written out
// to measure the server against, in _test files) are SQL by design and outside it.
//
// A string literal is SQL text when, case aside, it is either
//
//   - a statement: it begins (after white space) with the head of one, SELECT … FROM <table>,
//     INSERT INTO <table>, UPDATE <table> SET, DELETE FROM <table>, or WITH [RECURSIVE] <name> AS (,
//     where a table is named by an identifier that is not one of prose's determiners (the, a, …);
//     or
//   - a condition as a WHERE clause writes one: a column (snake_case, or qualified by its table's
//     alias) compared with a placeholder or a quoted literal, or such a column tested
//     IS [NOT] NULL.
//
// The heads take their table (or SET, or AS) so that a route pattern (DELETE /agent_api/…) is no
// statement, the tables their form so that a sentence (Delete from the inbox?) is none, and the
// columns theirs so that a sentence ("%s is null while %s is not") is no condition.
var (
	sqlHeads = []*regexp.Regexp{
		regexp.MustCompile(`(?is)^\s*select\s.*?\bfrom\s+["(]?([a-z_][a-z0-9_]*)`),
		regexp.MustCompile(`(?is)^\s*insert\s+into\s+"?([a-z_][a-z0-9_]*)`),
		regexp.MustCompile(`(?is)^\s*update\s+"?([a-z_][a-z0-9_]*)"?\s+set\s`),
		regexp.MustCompile(`(?is)^\s*delete\s+from\s+"?([a-z_][a-z0-9_]*)`),
		regexp.MustCompile(`(?is)^\s*with\s+(?:recursive\s+)?([a-z_][a-z0-9_]*)\s*(?:\([^)]*\)\s*)?as\s*\(`),
	}
	sqlCondition = regexp.MustCompile(`(?i)(\b[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*|\b[a-z][a-z0-9]*_[a-z0-9_]+)\s*(=|<>|!=|<=|>=|<|>)\s*(\?|\$[0-9]+|'[^']*')` +
		`|(\b[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*|\b[a-z][a-z0-9]*_[a-z0-9_]+)\s+is\s+(not\s+)?null\b`)
	// proseDeterminers are the words a sentence puts where a statement names its table.
	proseDeterminers = map[string]bool{"the": true, "a": true, "an": true, "this": true, "that": true, "these": true,
		"those": true, "its": true, "their": true, "your": true, "our": true, "my": true, "each": true, "every": true,
		"all": true, "any": true, "no": true, "some": true}
)

// isSQL reports whether s is SQL text by the rule above.
func isSQL(s string) bool {
	for _, head := range sqlHeads {
		if m := head.FindStringSubmatch(s); m != nil && !proseDeterminers[strings.ToLower(m[1])] {
			return true
		}
	}
	return sqlCondition.MatchString(s)
}

// sqlRuleCovers reports whether the rule covers the file p (slash-separated, relative to the
// repository's root): non-test Go under core/, outside core/store.
func sqlRuleCovers(p string) bool {
	return strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") &&
		under(path.Dir(p), "core") && !under(path.Dir(p), "core/store")
}

// sqlLiterals lists, over the files of fsys the rule covers (generated files aside), each string
// literal that is SQL text, as file:line: text.
func sqlLiterals(fsys fs.FS) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != "." && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return fs.SkipDir
			}
			return nil
		}
		if !sqlRuleCovers(p) {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if generated(src) {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && isSQL(s) {
				out = append(out, fmt.Sprintf("%s:%d: %q", p, fset.Position(lit.Pos()).Line, s))
			}
			return true
		})
		return nil
	})
	sort.Strings(out)
	return out, err
}

func TestNoSQLOutsideTheStore(t *testing.T) {
	t.Parallel()
	found, err := sqlLiterals(os.DirFS(repoRoot))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s is SQL text outside core/store: name the statement in the store and call it", f)
	}
}

// TestSQLDetector pins what the rule calls SQL: statements of every kind and case, the
// conditions a claim or a query was written with, and not the route patterns, sentences and
// words that share their first word.
func TestSQLDetector(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`SELECT created_by_kind, created_by_public_id FROM conversations WHERE id = ?`,
		"\n  select id from tasks",
		`SELECT COALESCE(MAX(settle_seq), 0) + 1 FROM tasks WHERE run_id = ?`,
		`SELECT t.id FROM (SELECT 1) AS t`,
		`INSERT INTO tasks (id) VALUES (?)`,
		`insert into "tasks" (id) values ($1)`,
		`UPDATE runs SET answer = (SELECT COALESCE(output, '') FROM tasks WHERE id = ?), status = ? WHERE id = ?`,
		`update tasks set status = 'x'`,
		`DELETE FROM idempotency_keys WHERE created_at < ?`,
		`WITH sealed AS (INSERT INTO sealed_requests (task_id) VALUES (?) RETURNING id) UPDATE tasks SET x = 1`,
		`WITH RECURSIVE chain(id, parts, depth) AS (SELECT 1)`,
		`t.status = 'running' AND t.claimed_at IS NULL AND t.lowered = ? AND r.status = 'running'`,
		`t.id = ? AND t.status = 'dispatched'`,
		` AND t.run_id = ?`,
		`claimed_at IS NULL`,
		`addressed_role = 'runner'`,
		`deadline_at <= $1`,
	} {
		if !isSQL(s) {
			t.Errorf("%q is SQL, and the rule does not say so", s)
		}
	}
	for _, s := range []string{
		"DELETE /agent_api/v1/tokens/{public_id}",
		"GET /agent_api/v1/workspaces/{ws}/runs",
		"%s is null while %s is not: send both null to create, or both set.",
		"Update the run with its steps.",
		"With force, rows a claimant holds are canceled too.",
		"selected",
		"insert_only",
		"runs: the claim was lost",
		"Delete from the inbox?",
		"Select a model from the list.",
		"update the set of tools",
		"the key = value pairs",
		"task_canceled",
		"deleted",
	} {
		if isSQL(s) {
			t.Errorf("%q is no SQL, and the rule calls it SQL", s)
		}
	}
}

// TestSQLRuleScope: the rule reads non-test, non-generated Go under core/ outside core/store,
// and reports each SQL literal of it with its place.
func TestSQLRuleScope(t *testing.T) {
	t.Parallel()
	const query = "package p\n\nconst q = `SELECT id FROM tasks WHERE id = ?`\n"
	fsys := fstest.MapFS{
		"core/runs/a.go":            {Data: []byte(query)},
		"core/runs/a_test.go":       {Data: []byte(query)},
		"core/runs/gen.go":          {Data: []byte("// Code generated by hand. DO NOT EDIT.\n\n" + query)},
		"core/runs/testdata/x.go":   {Data: []byte(query)},
		"core/store/s.go":           {Data: []byte(query)},
		"core/store/storetest/k.go": {Data: []byte(query)},
		"core/storefront/f.go":      {Data: []byte(query)},
		"providers/memory-pg/q.go":  {Data: []byte(query)},
		"core/runs/b.go":            {Data: []byte("package p\n\nvar routes = []string{\"DELETE /agent_api/v1/tokens/current\"}\n")},
	}
	found, err := sqlLiterals(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"core/runs/a.go:3: \"SELECT id FROM tasks WHERE id = ?\"",
		"core/storefront/f.go:3: \"SELECT id FROM tasks WHERE id = ?\"",
	}
	if strings.Join(found, "\n") != strings.Join(want, "\n") {
		t.Fatalf("found\n%s\nwant\n%s", strings.Join(found, "\n"), strings.Join(want, "\n"))
	}
}
