package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// A refusal word is a constant named for the role it plays (Code…, Word…, Key…) whose value is a
// snake_case string literal: each is defined once, in the package that owns it, and every other
// package refers to that constant (docs/development.md#each-word-once).
var (
	wordConstName = regexp.MustCompile(`^(Code|Word|Key)[A-Z]`)
	wordLiteral   = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)+$`)
)

// wordDefinition is where one word's literal is written.
type wordDefinition struct {
	word, where string
}

// wordDefinitions lists the refusal-word literals of one Go file's constants.
func wordDefinitions(fset *token.FileSet, name string, src []byte) ([]wordDefinition, error) {
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var out []wordDefinition
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) || !wordConstName.MatchString(n.Name) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				w, err := strconv.Unquote(lit.Value)
				if err != nil || !wordLiteral.MatchString(w) {
					continue
				}
				out = append(out, wordDefinition{w, fset.Position(n.Pos()).String() + " " + n.Name})
			}
		}
	}
	return out, nil
}

// duplicateWords maps each word written more than once to where it is written.
func duplicateWords(defs []wordDefinition) map[string][]string {
	at := map[string][]string{}
	for _, d := range defs {
		at[d.word] = append(at[d.word], d.where)
	}
	for w, places := range at {
		if len(places) < 2 {
			delete(at, w)
		}
	}
	return at
}

// TestEachRefusalWordOnce fails when a refusal word's literal is defined by more than one
// constant of the module's non-test code: the second definition must refer to the first.
func TestEachRefusalWordOnce(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var defs []wordDefinition
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
		ds, err := wordDefinitions(fset, f, src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		defs = append(defs, ds...)
	}
	if len(defs) == 0 {
		t.Fatal("found no refusal word at all")
	}
	dups := duplicateWords(defs)
	words := make([]string, 0, len(dups))
	for w := range dups {
		words = append(words, w)
	}
	sort.Strings(words)
	for _, w := range words {
		t.Errorf("%q is defined %d times; define it once and refer to it: %s", w, len(dups[w]), strings.Join(dups[w], "; "))
	}
}

// TestDuplicateWordsFindsASecondLiteral keeps the check above able to fail: a word written as two
// constants' literals is found, one referring to the other is not, and a literal that is no word
// (a sentence, a constant of another name) is ignored.
func TestDuplicateWordsFindsASecondLiteral(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	a, err := wordDefinitions(fset, "a.go", []byte("package a\nconst (\n\tCodeToolNotServed = \"tool_not_served\"\n\tCodeOther = \"a sentence\"\n\tkindTask = \"model_task\"\n)\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wordDefinitions(fset, "b.go", []byte("package b\nconst WordToolNotServed, KeyStale = \"tool_not_served\", \"stale_object\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := wordDefinitions(fset, "c.go", []byte("package c\nimport \"a\"\nconst CodeToolNotServed = a.CodeToolNotServed\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || len(b) != 2 || len(c) != 0 {
		t.Fatalf("definitions: a %v, b %v, c %v", a, b, c)
	}
	dups := duplicateWords(append(append(a, b...), c...))
	if len(dups) != 1 || len(dups["tool_not_served"]) != 2 {
		t.Fatalf("duplicates = %v", dups)
	}
	if len(duplicateWords(append(a, c...))) != 0 {
		t.Fatal("a constant that refers to the one definition counts as a second")
	}
}
