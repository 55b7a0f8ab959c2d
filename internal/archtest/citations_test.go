package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository's comments and documents cite its own files (docs/…, a package's doc.go) or
// state the rule they rely on: a reader of the repository has nothing else. These are the
// marks of a citation of something outside it.
var (
	// sectionSign marks a citation of a numbered section of some other document.
	sectionSign = "\u00a7"
	// mdName is a Markdown file name, with the path written before it.
	mdName = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./#-])((?:\.\./)*[A-Za-z0-9_-]+(?:/[A-Za-z0-9_.-]+)*\.md)\b(#[a-z0-9_-]+)?`)
	// memoryPath is a memory document's path, which ends in .md as often as not and is no
	// citation: the kernel's memory roots.
	memoryPath = regexp.MustCompile(`^(workspace|user|conversation|nworkspace|nuser)/`)
)

// trackedFiles lists the repository's files, as git knows them.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

// citedLine is one line that may cite, with its line number in its file.
type citedLine struct {
	n    int
	text string
}

// citationLines are the lines of a file that may cite: a Go file's comments, any other text file
// whole. Binary files carry no citations.
func citationLines(t *testing.T, path string) []citedLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		if os.IsNotExist(err) {
			return nil // deleted in the work tree, not yet in the index
		}
		t.Fatal(err)
	}
	if strings.IndexByte(string(b), 0) >= 0 {
		return nil
	}
	var out []citedLine
	if !strings.HasSuffix(path, ".go") {
		for i, l := range strings.Split(string(b), "\n") {
			out = append(out, citedLine{i + 1, l})
		}
		return out
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, b, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			first := fset.Position(c.Pos()).Line
			for i, l := range strings.Split(c.Text, "\n") {
				out = append(out, citedLine{first + i, l})
			}
		}
	}
	// A section sign anywhere in Go source, strings included, is a citation too: a test's
	// failure message is read as much as a comment.
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sectionSign) {
			out = append(out, citedLine{i + 1, l})
		}
	}
	return out
}

// TestNoCitationOutsideTheRepository fails on a comment or a document that cites a document
// the repository does not have: a *.md name that is no file of it (relative to the repository's
// root or to the citing file), or a section-sign citation. A docs/ link with an anchor must reach
// a heading of that file.
func TestNoCitationOutsideTheRepository(t *testing.T) {
	t.Parallel()
	files := trackedFiles(t)
	exists := map[string]bool{}
	for _, f := range files {
		exists[f] = true
	}
	for _, f := range files {
		for _, cl := range citationLines(t, f) {
			line := cl.text
			if strings.Contains(line, sectionSign) {
				t.Errorf("%s:%d: a section-sign citation: cite docs/ or a doc.go, or state the rule", f, cl.n)
			}
			for _, m := range mdName.FindAllStringSubmatch(line, -1) {
				name, anchor := m[1], strings.TrimPrefix(m[2], "#")
				if memoryPath.MatchString(name) {
					continue
				}
				target := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f), name)))
				if !exists[target] {
					target = filepath.ToSlash(filepath.Clean(name))
				}
				if !exists[target] {
					t.Errorf("%s:%d: cites %s, which is no file of the repository", f, cl.n, name)
					continue
				}
				if anchor != "" {
					b, err := os.ReadFile(filepath.Join(repoRoot, target))
					if err != nil {
						t.Fatal(err)
					}
					if !anchors(string(b))[anchor] {
						t.Errorf("%s:%d: cites %s#%s, a heading %s does not have", f, cl.n, name, anchor, target)
					}
				}
			}
		}
	}
}
