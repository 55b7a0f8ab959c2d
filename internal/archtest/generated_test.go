package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const generatedPkg = module + "/sdk/internal/pb/"

// TestGeneratedTypesStayInternal: no exported identifier of a public SDK package (an exported
// function, a method of an exported type, an exported type or field) mentions a generated
// protocol type. Only unexported shims translate.
func TestGeneratedTypesStayInternal(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "sdk")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "internal" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		aliases := map[string]bool{}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, generatedPkg) {
				continue
			}
			name := filepath.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			aliases[name] = true
		}
		if len(aliases) == 0 {
			return nil
		}
		checked++
		mentions := func(n ast.Node) bool {
			found := false
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && aliases[id.Name] {
						found = true
					}
				}
				return !found
			})
			return found
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				if mentions(d.Type) {
					t.Errorf("%s: %s exposes a generated type", path, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								exported := len(field.Names) == 0
								for _, n := range field.Names {
									exported = exported || n.IsExported()
								}
								if exported && mentions(field.Type) {
									t.Errorf("%s: a field of %s exposes a generated type", path, s.Name.Name)
								}
							}
						} else if mentions(s.Type) {
							t.Errorf("%s: %s exposes a generated type", path, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && s.Type != nil && mentions(s.Type) {
								t.Errorf("%s: %s exposes a generated type", path, n.Name)
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no public SDK file imports the generated code: the check checked nothing")
	}
}

func exportedRecv(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
