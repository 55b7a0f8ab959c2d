package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Each word once (docs/development.md#each-word-once). A word is a snake_case string literal
// (SQL, sentences and paths hold spaces, dots or slashes, so they are no words). Over the
// module's non-test code, three rules hold:
//
//  1. Every package-level constant whose value is a word defines that word, whatever the
//     constant's name; a word is defined once, and every other constant refers to the first.
//  2. The code argument of refusal.New or refusal.Newf (core's or the SDK's) is never a
//     literal: a refusal word is named by a constant before it is answered.
//  3. A refusal word or event name (a word defined by a constant named Code…, Word…, Event… or
//     Reason…, exported or not) is never spelled as a literal again: a table's row, a call's
//     argument or a comparison refers to the constant. A test kit (a package whose name ends
//     in "test") spells the answers it expects, as a test does, and is not held to this rule.
//
// wordExemptions lists the few words written twice on purpose, each with its reason.
var (
	wordLiteral  = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)+$`)
	roleConstant = regexp.MustCompile(`^([Cc]ode|[Ww]ord|[Ee]vent|[Rr]eason)[A-Z]`)
)

// wordExemption allows a definition or a spelling of word in package pkg besides the owner's.
type wordExemption struct{ word, pkg string }

var wordExemptions = map[wordExemption]string{
	{"tool_provider", "sdk/announce"}: "a plugin kind (what a plugin binary serves) shares its spelling with the executor kind of core/store, a vocabulary of its own; the store may import no SDK package but sdk/jsonwire",
	{"not_found", "sdk/memory"}:       "a memory ErrorKind's word (the plugin protocol's enum name, in the kind table) shares its spelling with sdk/refusal's door word",
}

// wordDefinition is a package-level constant whose value is a word.
type wordDefinition struct {
	word, pkg, where string
	role             bool // the constant's name marks a refusal word or an event name
}

// wordSpelling is a word's literal outside the package-level constants.
type wordSpelling struct {
	word, pkg, where string
	code             bool // the code argument of refusal.New or Newf
}

// refusalConstructor reports whether fun is refusal.New or refusal.Newf (or New and Newf inside
// a refusal package itself).
func refusalConstructor(fun ast.Expr, pkg string) bool {
	switch f := fun.(type) {
	case *ast.SelectorExpr:
		x, ok := f.X.(*ast.Ident)
		return ok && x.Name == "refusal" && (f.Sel.Name == "New" || f.Sel.Name == "Newf")
	case *ast.Ident:
		return path.Base(pkg) == "refusal" && (f.Name == "New" || f.Name == "Newf")
	}
	return false
}

// fileWords lists the words one Go file defines and the words it spells elsewhere. name is
// the file's module-relative path; its directory is the package.
func fileWords(fset *token.FileSet, name string, src []byte) ([]wordDefinition, []wordSpelling, error) {
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, nil, err
	}
	pkg := path.Dir(filepath.ToSlash(name))
	word := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		w, err := strconv.Unquote(lit.Value)
		return w, err == nil && wordLiteral.MatchString(w)
	}
	var defs []wordDefinition
	var spells []wordSpelling
	codeArgs := map[ast.Expr]bool{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if w, ok := word(vs.Values[i]); ok {
						defs = append(defs, wordDefinition{w, pkg, fset.Position(n.Pos()).String() + " " + n.Name, roleConstant.MatchString(n.Name)})
					}
				}
			}
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if refusalConstructor(n.Fun, pkg) && len(n.Args) >= 2 {
					if lit, ok := n.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						codeArgs[lit] = true
					}
				}
			case *ast.BasicLit:
				w, ok := word(n)
				if codeArgs[n] && !ok {
					w, _ = strconv.Unquote(n.Value)
				}
				if ok || codeArgs[n] {
					spells = append(spells, wordSpelling{w, pkg, fset.Position(n.Pos()).String(), codeArgs[n]})
				}
			}
			return true
		})
	}
	return defs, spells, nil
}

// wordProblems answers every breach of the three rules, sorted, and the exemptions it used.
func wordProblems(defs []wordDefinition, spells []wordSpelling, exempt map[wordExemption]string) ([]string, map[wordExemption]bool) {
	used := map[wordExemption]bool{}
	allowed := func(word, pkg string) bool {
		e := wordExemption{word, pkg}
		if _, ok := exempt[e]; ok {
			used[e] = true
			return true
		}
		return false
	}
	var out []string
	at := map[string][]string{}
	owner := map[string]string{}
	for _, d := range defs {
		if allowed(d.word, d.pkg) {
			continue
		}
		at[d.word] = append(at[d.word], d.where)
		if d.role {
			owner[d.word] = d.where
		}
	}
	for w, places := range at {
		if len(places) > 1 {
			out = append(out, fmt.Sprintf("%q is defined %d times; define it once and refer to it: %s", w, len(places), strings.Join(places, "; ")))
		}
	}
	for _, s := range spells {
		switch {
		case s.code:
			out = append(out, fmt.Sprintf("%s: refusal code %q is a literal; name it as a constant and pass that", s.where, s.word))
		case owner[s.word] == "" || strings.HasSuffix(path.Base(s.pkg), "test") || allowed(s.word, s.pkg):
		default:
			out = append(out, fmt.Sprintf("%s spells %q, which %s defines; refer to that constant", s.where, s.word, owner[s.word]))
		}
	}
	sort.Strings(out)
	return out, used
}

// TestEachRefusalWordOnce holds the module's non-test code to the three rules above, and fails
// on an exemption nothing needs any more.
func TestEachRefusalWordOnce(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var defs []wordDefinition
	var spells []wordSpelling
	for _, f := range trackedFiles(t) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || strings.Contains(f, "/testdata/") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		ds, ss, err := fileWords(fset, f, src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		defs, spells = append(defs, ds...), append(spells, ss...)
	}
	if len(defs) == 0 || len(spells) == 0 {
		t.Fatalf("found %d word definitions and %d spellings; the scan reads nothing", len(defs), len(spells))
	}
	problems, used := wordProblems(defs, spells, wordExemptions)
	for _, p := range problems {
		t.Error(p)
	}
	for e, why := range wordExemptions {
		if !used[e] {
			t.Errorf("the exemption of %q in %s (%s) is no longer needed; remove it", e.word, e.pkg, why)
		}
	}
}

// TestDuplicateWordsFindsASecondLiteral keeps the check above able to fail, rule by rule: a word written
// as two constants' literals (of any name) is found and one referring to the other is not; a
// literal refusal code is found and a named one is not; a refusal word or event name spelled
// in a table or a comparison is found, while a word no such constant defines, a test kit's
// expectation and an exempted spelling are not; an exemption is reported as used.
func TestDuplicateWordsFindsASecondLiteral(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	scan := func(name, src string) ([]wordDefinition, []wordSpelling) {
		t.Helper()
		d, s, err := fileWords(fset, name, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return d, s
	}
	count := func(defs []wordDefinition, spells []wordSpelling, exempt map[wordExemption]string) int {
		t.Helper()
		p, _ := wordProblems(defs, spells, exempt)
		return len(p)
	}

	// Rule 1: any constant's name.
	a, _ := scan("a/a.go", "package a\nconst (\n\tCodeToolNotServed = \"tool_not_served\"\n\tCodeOther = \"a sentence\"\n\tkindTask = \"model_task\"\n)\n")
	b, _ := scan("b/b.go", "package b\nconst wireTask, KeyStale = \"model_task\", \"stale_object\"\n")
	c, _ := scan("c/c.go", "package c\nimport \"a\"\nconst CodeToolNotServed = a.CodeToolNotServed\nconst kindTask = a.KindTask\n")
	if len(a) != 2 || len(b) != 2 || len(c) != 0 {
		t.Fatalf("definitions: a %v, b %v, c %v", a, b, c)
	}
	if p, _ := wordProblems(append(a, b...), nil, nil); len(p) != 1 || !strings.Contains(p[0], `"model_task" is defined 2 times`) {
		t.Fatalf("two constants of other names: %v", p)
	}
	if n := count(append(a, c...), nil, nil); n != 0 {
		t.Fatalf("a constant that refers to the one definition counts as a second (%d problems)", n)
	}

	// Rule 2: the code argument of refusal.New and Newf.
	_, lit := scan("d/d.go", "package d\nimport \"refusal\"\nfunc f() error {\n\tif true {\n\t\treturn refusal.Newf(refusal.Conflict, \"task_gone\", \"%d\", 1)\n\t}\n\treturn refusal.New(refusal.Conflict, \"stale\", \"gone\")\n}\n")
	_, named := scan("d/e.go", "package d\nimport \"refusal\"\nfunc g() error { return refusal.New(refusal.Conflict, CodeGone, \"the task is gone\") }\n")
	if n := count(nil, lit, nil); n != 2 {
		t.Fatalf("literal refusal codes: %d problems, want 2 (%v)", n, lit)
	}
	if n := count(nil, named, nil); n != 0 {
		t.Fatalf("a named refusal code counts as a literal (%d problems)", n)
	}

	// Rule 3: a refusal word or event name spelled again.
	owner, _ := scan("e/e.go", "package e\nconst (\n\tEventWorkAvailable = \"work_available\"\n\tfieldToolName = \"tool_name\"\n)\n")
	_, table := scan("f/f.go", "package f\nvar names = map[string]int{\"work_available\": 1, \"tool_name\": 2}\nfunc h(s string) bool { return s == \"work_available\" }\n")
	_, kit := scan("f/ftest/kit.go", "package ftest\nvar want = []string{\"work_available\"}\n")
	if n := count(owner, table, nil); n != 2 {
		t.Fatalf("an event name in a table and a comparison: %d problems, want 2", n)
	}
	if n := count(owner, kit, nil); n != 0 {
		t.Fatalf("a test kit's expectation counts (%d problems)", n)
	}
	exempt := map[wordExemption]string{{"work_available", "f"}: "a reason"}
	p, used := wordProblems(owner, table, exempt)
	if len(p) != 0 || !used[wordExemption{"work_available", "f"}] {
		t.Fatalf("an exempted spelling: problems %v, used %v", p, used)
	}
}
