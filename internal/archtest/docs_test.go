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

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../.."

// wordSources says which document must name the words a package defines: every string constant
// whose name starts with one of the prefixes. The words are what clients and models branch on,
// so each is documented where its reader looks.
var wordSources = []struct {
	dir, doc string
	prefixes []string
}{
	{"core/refusal", "docs/api.md", []string{"Code"}},
	{"core/identity", "docs/api.md", []string{"Code"}},
	{"core/executors", "docs/api.md", []string{"Code"}},
	{"core/envelope", "docs/api.md", []string{"Code"}},
	{"core/memory", "docs/api.md", []string{"Code"}},
	{"core/uploads", "docs/api.md", []string{"Code"}},
	{"core/runs", "docs/api.md", []string{"Code", "Key"}},
	{"core/steps", "docs/api.md", []string{"Code"}},
	{"core/model", "docs/api.md", []string{"Code", "Key"}},
	{"sdk/memory", "docs/api.md", []string{"Code"}},
	{"sdk/announce", "docs/api.md", []string{"Code"}},
	{"core/declare", "docs/agent-tools.md", []string{"Word"}},
	{"core/conversations", "docs/agent-tools.md", []string{"Word"}},
	{"core/kernel", "docs/agent-tools.md", []string{"Word", "Code"}},
	{"plugins", "docs/plugins.md", []string{"Code"}},
}

// stringConsts returns the string constants of the package in dir whose names start with one of
// prefixes, as name → value; test files are left out.
func stringConsts(t *testing.T, dir string, prefixes []string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(filepath.Join(repoRoot, dir))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(repoRoot, dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					for _, pre := range prefixes {
						if strings.HasPrefix(name.Name, pre) {
							v, err := strconv.Unquote(lit.Value)
							if err == nil {
								out[name.Name] = v
							}
						}
					}
				}
			}
		}
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("`[^`]+`")
	wordRun  = regexp.MustCompile(`[a-z0-9_]+`)
)

// codeWords returns the words written in code spans of a Markdown text (`422 not_found` names
// not_found).
func codeWords(md string) map[string]bool {
	out := map[string]bool{}
	// A code span never crosses a paragraph, so a stray backquote upsets one paragraph only.
	for _, para := range strings.Split(md, "\n\n") {
		for _, span := range codeSpan.FindAllString(para, -1) {
			for _, w := range wordRun.FindAllString(span, -1) {
				out[w] = true
			}
		}
	}
	return out
}

// TestDocsNameEveryWord fails when a refusal word, a task error key or a model-facing refusal
// word is defined in code without being named, in a code span, in the document its reader uses.
func TestDocsNameEveryWord(t *testing.T) {
	t.Parallel()
	docs := map[string]map[string]bool{}
	for _, src := range wordSources {
		if _, ok := docs[src.doc]; !ok {
			b, err := os.ReadFile(filepath.Join(repoRoot, src.doc))
			if err != nil {
				t.Fatal(err)
			}
			docs[src.doc] = codeWords(mdFence.ReplaceAllString(string(b), ""))
		}
		words := stringConsts(t, src.dir, src.prefixes)
		if len(words) == 0 {
			t.Errorf("%s defines no %v constants: the table is stale", src.dir, src.prefixes)
		}
		names := make([]string, 0, len(words))
		for n := range words {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if !docs[src.doc][words[n]] {
				t.Errorf("%s.%s = %q is not named in %s", src.dir, n, words[n], src.doc)
			}
		}
	}
}

// markdownFiles lists README.md and every Markdown file under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	entries, err := os.ReadDir(filepath.Join(repoRoot, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			files = append(files, filepath.Join("docs", e.Name()))
		}
	}
	return files
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile("(?m)^#{1,6} (.+)$")
	mdFence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// slug is the anchor GitHub gives a heading: lower case, punctuation other than hyphens and
// underscores dropped, spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the heading anchors of a Markdown text, fenced blocks left out.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(md, ""), -1) {
		out[slug(m[1])] = true
	}
	return out
}

// TestDocLinksResolve fails on a link of README.md or docs/ to a file of the repository that does
// not exist, or to a heading the target does not have.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		text := mdFence.ReplaceAllString(string(b), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), path)
			}
			tb, err := os.ReadFile(filepath.Join(repoRoot, file))
			if err != nil {
				t.Errorf("%s links to %s, which the repository does not have", f, target)
				continue
			}
			if anchor != "" && !anchors(string(tb))[anchor] {
				t.Errorf("%s links to %s: %s has no heading with that anchor", f, target, file)
			}
		}
	}
}
