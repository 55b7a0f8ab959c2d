package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// The repository is self-contained: no test, build step or tool reads a file outside it, so a
// clone in an empty directory passes `make test`. TestNoPathLeavesTheRepository reads every Go
// file of the repository (nested modules too, whatever their build tags) and follows the string
// literals and constants that reach a call opening a file or naming a directory: the calls of
// fileCalls, a command's Dir, and //go:embed patterns. A path that is absolute, or that climbs
// above the repository from the directory a test runs in (its package's), or that climbs out of
// a directory it cannot know (a temporary directory, a root found at run time) fails.
//
// It follows a value through local assignments, range loops over literal lists, package-level
// constants and variables of any package of the repository, filepath.Join and path.Join,
// concatenation, and the parameters of plain functions to their call sites anywhere in the
// repository (a kit's function reading a directory its caller names). A test case's hostile
// input (a memory path like ../../etc/passwd handed to a provider) reaches no such call and is
// not a path this test knows.

// fileCalls are the calls whose first argument is a path the process reads or enters.
var fileCalls = map[string]bool{
	"os.ReadFile": true, "os.Open": true, "os.OpenFile": true, "os.Stat": true, "os.Lstat": true,
	"os.ReadDir": true, "os.DirFS": true, "os.Chdir": true, "filepath.Glob": true,
}

// maxFollow bounds how many call sites deep a parameter is followed; the repository's deepest
// chain (a test, a kit's exported helper, its unexported reader) is three.
const maxFollow = 6

// maxAlternatives bounds the values one expression may stand for (a range over a literal list, a
// helper called from many tests), so that a pathological fan cannot make the test slow.
const maxAlternatives = 256

// part is one piece of a path: a known string, or something computed at run time.
type part struct {
	known bool
	s     string
}

// pathValue is one value a path expression may take, and the directory it is resolved against:
// the package directory of the code that wrote its first piece, where that code's test runs.
type pathValue struct {
	parts []part
	base  string
	// origin is where the known text came from, for the message.
	origin string
}

type srcFile struct {
	name    string // repository-relative, slash-separated
	dir     string
	fset    *token.FileSet
	ast     *ast.File
	imports map[string]string // local name → directory of a repository package
}

type funcKey struct{ dir, name string }

type callSite struct {
	call *ast.CallExpr
	file *srcFile
}

type paramRef struct {
	fn    funcKey
	index int
}

// pathIndex is what the check knows of the repository's Go code.
type pathIndex struct {
	files   []*srcFile
	values  map[funcKey][]valueDecl // package-level const and var, by directory and name
	calls   map[funcKey][]callSite  // call sites of plain functions
	params  map[*ast.Field]paramRef // parameter declarations of plain functions
	modules map[string]string       // module path → directory ("." for the root)
	visited map[*ast.Ident]bool     // identifiers being evaluated, against cycles
}

type valueDecl struct {
	expr ast.Expr
	file *srcFile
}

// finding is one path that leaves the repository.
type finding struct {
	pos, what, path string
}

func (f finding) String() string { return fmt.Sprintf("%s: %s reaches %q", f.pos, f.what, f.path) }

// pathFindings parses the named files of fsys (Go files and go.mod files; others are ignored)
// and answers every path that leaves the repository.
func pathFindings(fsys fs.FS, names []string) ([]finding, error) {
	ix := &pathIndex{
		values: map[funcKey][]valueDecl{}, calls: map[funcKey][]callSite{}, params: map[*ast.Field]paramRef{},
		modules: map[string]string{}, visited: map[*ast.Ident]bool{},
	}
	for _, n := range names {
		if path.Base(n) != "go.mod" {
			continue
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if mod, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
				dir := path.Dir(n)
				ix.modules[strings.Trim(strings.TrimSpace(mod), `"`)] = dir
			}
		}
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".go") || strings.Contains("/"+n, "/testdata/") {
			continue
		}
		src, err := fs.ReadFile(fsys, n)
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet in the index
			}
			return nil, err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, n, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		sf := &srcFile{name: n, dir: path.Dir(n), fset: fset, ast: f, imports: map[string]string{}}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			dir, ok := ix.dirOf(p)
			if !ok {
				continue
			}
			local := path.Base(p)
			if im.Name != nil {
				local = im.Name.Name
			}
			sf.imports[local] = dir
		}
		ix.files = append(ix.files, sf)
	}
	for _, sf := range ix.files {
		ix.indexFile(sf)
	}
	var out []finding
	for _, sf := range ix.files {
		out = append(out, ix.check(sf)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out, nil
}

// dirOf answers the directory of a repository package's import path.
func (ix *pathIndex) dirOf(importPath string) (string, bool) {
	best, dir, ok := -1, "", false
	for mod, d := range ix.modules {
		if importPath != mod && !strings.HasPrefix(importPath, mod+"/") {
			continue
		}
		if len(mod) > best {
			best, ok = len(mod), true
			dir = path.Join(d, strings.TrimPrefix(strings.TrimPrefix(importPath, mod), "/"))
		}
	}
	return dir, ok
}

func (ix *pathIndex) indexFile(sf *srcFile) {
	for _, d := range sf.ast.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok || len(vs.Values) != len(vs.Names) {
					continue
				}
				for i, n := range vs.Names {
					k := funcKey{sf.dir, n.Name}
					ix.values[k] = append(ix.values[k], valueDecl{vs.Values[i], sf})
				}
			}
		case *ast.FuncDecl:
			if d.Recv != nil {
				continue
			}
			i := 0
			for _, fld := range d.Type.Params.List {
				ix.params[fld] = paramRef{funcKey{sf.dir, d.Name.Name}, i}
				i += max(len(fld.Names), 1)
			}
		}
	}
	ast.Inspect(sf.ast, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fn := call.Fun.(type) {
		case *ast.Ident:
			if fn.Obj == nil || fn.Obj.Kind == ast.Fun {
				k := funcKey{sf.dir, fn.Name}
				ix.calls[k] = append(ix.calls[k], callSite{call, sf})
			}
		case *ast.SelectorExpr:
			if x, ok := fn.X.(*ast.Ident); ok && x.Obj == nil {
				if dir, ok := sf.imports[x.Name]; ok {
					k := funcKey{dir, fn.Sel.Name}
					ix.calls[k] = append(ix.calls[k], callSite{call, sf})
				}
			}
		}
		return true
	})
}

// check answers the paths of one file that leave the repository.
func (ix *pathIndex) check(sf *srcFile) []finding {
	var out []finding
	report := func(pos token.Pos, what string, vals []pathValue) {
		for _, v := range vals {
			if p, bad := leaves(v); bad {
				out = append(out, finding{sf.fset.Position(pos).String(), what, p})
			}
		}
	}
	for _, cg := range sf.ast.Comments {
		for _, c := range cg.List {
			pats, ok := strings.CutPrefix(c.Text, "//go:embed ")
			if !ok {
				continue
			}
			for _, p := range strings.Fields(pats) {
				if u, err := strconv.Unquote(p); err == nil {
					p = u
				}
				report(c.Pos(), "//go:embed", []pathValue{{parts: []part{{true, p}}, base: sf.dir}})
			}
		}
	}
	ast.Inspect(sf.ast, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			name := selectorName(n.Fun)
			if fileCalls[name] && len(n.Args) > 0 {
				report(n.Pos(), name, ix.eval(n.Args[0], sf, sf.dir, 0))
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "Dir" && len(n.Rhs) == len(n.Lhs) {
					report(n.Pos(), "a command's Dir", ix.eval(n.Rhs[i], sf, sf.dir, 0))
				}
			}
		case *ast.CompositeLit:
			if selectorName(n.Type) != "exec.Cmd" {
				return true
			}
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Dir" {
						report(kv.Pos(), "a command's Dir", ix.eval(kv.Value, sf, sf.dir, 0))
					}
				}
			}
		}
		return true
	})
	return out
}

// selectorName answers "pkg.Name" for a qualified identifier, else "".
func selectorName(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || x.Obj != nil {
		return ""
	}
	return x.Name + "." + sel.Sel.Name
}

var unknown = []part{{known: false}}

// eval answers the values a path expression may take: known text where literals and constants
// decide it, unknown parts where the program computes it.
func (ix *pathIndex) eval(e ast.Expr, sf *srcFile, base string, depth int) []pathValue {
	one := func(parts []part) []pathValue {
		return []pathValue{{parts: parts, base: base, origin: sf.name}}
	}
	if depth > maxFollow {
		return one(unknown)
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			if s, err := strconv.Unquote(e.Value); err == nil {
				return one([]part{{true, s}})
			}
		}
	case *ast.ParenExpr:
		return ix.eval(e.X, sf, base, depth)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return concat(ix.eval(e.X, sf, base, depth), ix.eval(e.Y, sf, base, depth), "")
		}
	case *ast.CallExpr:
		switch selectorName(e.Fun) {
		case "filepath.Join", "path.Join":
			if len(e.Args) == 0 || e.Ellipsis.IsValid() {
				break
			}
			acc := ix.eval(e.Args[0], sf, base, depth)
			for _, a := range e.Args[1:] {
				acc = concat(acc, ix.eval(a, sf, base, depth), "/")
			}
			return acc
		case "filepath.Clean", "path.Clean", "filepath.FromSlash", "filepath.ToSlash", "filepath.Abs":
			if len(e.Args) == 1 {
				return ix.eval(e.Args[0], sf, base, depth)
			}
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Obj == nil {
			if dir, ok := sf.imports[x.Name]; ok {
				return ix.declared(funcKey{dir, e.Sel.Name}, base, depth)
			}
		}
	case *ast.Ident:
		return ix.ident(e, sf, base, depth)
	}
	return one(unknown)
}

// ident answers the values an identifier may hold.
func (ix *pathIndex) ident(id *ast.Ident, sf *srcFile, base string, depth int) []pathValue {
	unk := []pathValue{{parts: unknown, base: base, origin: sf.name}}
	if ix.visited[id] {
		return unk
	}
	ix.visited[id] = true
	defer delete(ix.visited, id)
	if id.Obj == nil {
		return ix.declared(funcKey{sf.dir, id.Name}, base, depth)
	}
	switch d := id.Obj.Decl.(type) {
	case *ast.ValueSpec:
		for i, n := range d.Names {
			if n.Name == id.Name && len(d.Values) == len(d.Names) {
				return ix.eval(d.Values[i], sf, base, depth+1)
			}
		}
	case *ast.AssignStmt:
		for i, l := range d.Lhs {
			li, ok := l.(*ast.Ident)
			if !ok || li.Name != id.Name {
				continue
			}
			if len(d.Rhs) == len(d.Lhs) {
				return ix.eval(d.Rhs[i], sf, base, depth+1)
			}
			// for k, v := range []string{...}: v takes each element.
			if u, ok := d.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.RANGE && i == 1 {
				if lit, ok := u.X.(*ast.CompositeLit); ok {
					var out []pathValue
					for _, el := range lit.Elts {
						out = append(out, ix.eval(el, sf, base, depth+1)...)
					}
					return cap256(out)
				}
			}
		}
	case *ast.Field:
		ref, ok := ix.params[d]
		if !ok {
			break
		}
		var out []pathValue
		for _, cs := range ix.calls[ref.fn] {
			if ref.index < len(cs.call.Args) && !cs.call.Ellipsis.IsValid() {
				// The caller's literal is resolved where the caller's test runs.
				out = append(out, ix.eval(cs.call.Args[ref.index], cs.file, cs.file.dir, depth+1)...)
			}
		}
		if len(out) > 0 {
			return cap256(out)
		}
	}
	return unk
}

// declared answers the values of a package-level constant or variable.
func (ix *pathIndex) declared(k funcKey, base string, depth int) []pathValue {
	decls := ix.values[k]
	if len(decls) == 0 {
		return []pathValue{{parts: unknown, base: base}}
	}
	var out []pathValue
	for _, d := range decls {
		out = append(out, ix.eval(d.expr, d.file, base, depth+1)...)
	}
	return cap256(out)
}

func cap256(v []pathValue) []pathValue {
	if len(v) > maxAlternatives {
		return v[:maxAlternatives]
	}
	return v
}

// concat answers every value of a followed by sep and a value of b.
func concat(a, b []pathValue, sep string) []pathValue {
	var out []pathValue
	for _, x := range a {
		for _, y := range b {
			parts := append([]part(nil), x.parts...)
			if sep != "" {
				parts = append(parts, part{true, sep})
			}
			parts = append(parts, y.parts...)
			origin := x.origin
			if origin == "" {
				origin = y.origin
			}
			out = append(out, pathValue{parts: parts, base: x.base, origin: origin})
			if len(out) >= maxAlternatives {
				return out
			}
		}
	}
	return out
}

// leaves answers whether a value leaves the repository, and the path as written (the unknown
// parts as "…"). A value with no known text is the program's own business.
func leaves(v pathValue) (string, bool) {
	var b strings.Builder
	var pieces []string
	cur, anyKnown := "", false
	for _, p := range v.parts {
		if p.known {
			b.WriteString(p.s)
			cur += p.s
			if strings.Trim(p.s, "/") != "" {
				anyKnown = true
			}
			continue
		}
		b.WriteString("…")
		pieces = append(pieces, cur)
		cur = ""
	}
	pieces = append(pieces, cur)
	shown := b.String()
	if !anyKnown {
		return shown, false
	}
	first := pieces[0]
	if strings.HasPrefix(first, "/") {
		return shown, true
	}
	if len(pieces) == 1 || first != "" {
		// Known from the start: resolved against the directory the test runs in.
		if climbs(path.Join(v.base, first)) {
			return shown, true
		}
	}
	for _, p := range pieces[1:] {
		// After a part computed at run time, the text may continue that part's last element;
		// climbing out of it is leaving a directory nobody here knows.
		segs := strings.Split(p, "/")
		if !strings.HasPrefix(p, "/") && len(segs) > 0 {
			segs = segs[1:]
		}
		depth := 0
		for _, s := range segs {
			switch s {
			case "", ".":
			case "..":
				depth--
				if depth < 0 {
					return shown, true
				}
			default:
				depth++
			}
		}
	}
	return shown, false
}

// climbs reports whether a repository-relative path, once cleaned, is above the repository.
func climbs(p string) bool {
	c := path.Clean(p)
	return c == ".." || strings.HasPrefix(c, "../")
}

// TestNoPathLeavesTheRepository: no literal or constant that reaches a file-opening call, a
// command's Dir or a //go:embed pattern names a file outside the repository.
func TestNoPathLeavesTheRepository(t *testing.T) {
	t.Parallel()
	files := trackedFiles(t)
	got, err := pathFindings(os.DirFS(repoRoot), files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		t.Errorf("%s: the repository must be self-contained (a test, build step or tool reads no file outside it): ship the file in testdata", f)
	}
}

// TestPathCheckFindsWhatLeaves proves the check can fail: each way a path reaches outside is
// found, and what stays inside, or is no path the process opens, is not.
func TestPathCheckFindsWhatLeaves(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"go.mod":     {Data: []byte("module example.com/m\n")},
		"kit/kit.go": {Data: []byte("package kit\n\nimport \"path/filepath\"\nimport \"os\"\n\n// Definition lies beside the repository.\nconst Definition = \"../beside/def.json\"\n\nfunc Golden(dir string) { readDir(dir) }\n\nfunc readDir(d string) { os.ReadDir(filepath.Join(d, \"golden\")) }\n")},
		"a/a_test.go": {Data: []byte(`package a

import (
	"os"
	"os/exec"
	"path/filepath"

	"example.com/m/kit"
)

const up = "../../"

func root() string { return "" }

func f() {
	os.ReadFile("../../outside.txt")          // climbs above the repository from a/
	os.ReadFile("../inside.txt")              // a/../inside.txt is the repository's
	os.Open(filepath.Join(root(), kit.Definition)) // climbs out of a run-time root
	p := filepath.Join(up, "x")
	os.Stat(p)                                // through a local and a constant
	for _, doc := range []string{"../README.md", "/etc/hosts"} {
		os.ReadFile(doc)                      // the second is absolute
	}
	kit.Golden("../../../elsewhere")          // through two parameters to a reader
	kit.Golden("testdata")                    // a/testdata/golden is the repository's
	cmd := exec.Command("true")
	cmd.Dir = "../.."                         // a command run above the repository
	_ = exec.Cmd{Dir: "/tmp/x"}
	handTo("../../etc/passwd")                // a hostile input, opened by nobody
	os.DirFS(filepath.Join(os.TempDir(), "x")) // a run-time directory, descended into
}

func handTo(string) {}
`)},
		"a/embed.go":       {Data: []byte("package a\n\nimport _ \"embed\"\n\n//go:embed testdata/x.json\nvar x []byte\n\n//go:embed ../../y.json\nvar y []byte\n")},
		"a/testdata/t.go":  {Data: []byte("package t\n\nimport \"os\"\n\nfunc g() { os.ReadFile(\"/etc/passwd\") }\n")},
		"nested/go.mod":    {Data: []byte("module example.com/nested\n")},
		"nested/n_test.go": {Data: []byte("package nested\n\nimport \"os\"\n\nfunc h() { os.ReadFile(\"../../up.txt\"); os.ReadFile(\"../go.mod\") }\n")},
	}
	var names []string
	for n := range fsys {
		names = append(names, n)
	}
	got, err := pathFindings(fsys, names)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range got {
		paths = append(paths, f.what+" "+f.path)
	}
	want := []string{
		"os.ReadFile ../../outside.txt",
		"os.Open …/../beside/def.json",
		"os.Stat ../..//x",
		"os.ReadFile /etc/hosts",
		"os.ReadDir ../../../elsewhere/golden",
		"a command's Dir ../..",
		"a command's Dir /tmp/x",
		"//go:embed ../../y.json",
		"os.ReadFile ../../up.txt",
	}
	sort.Strings(paths)
	sort.Strings(want)
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
}
