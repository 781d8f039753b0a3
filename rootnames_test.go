package pacer

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxRootNames is the most exported top-level names the root package may
// declare. It is a ratchet: lower it when a change takes names out of the
// root, never raise it. Issue 26 ("The root package as the caller's
// vocabulary") tracks the target, 60: what a caller says lives here, and
// what someone implements or tunes rarely goes to a package of its own
// (observe, store, retry, classify), so a new feature lands in a
// sub-package or keeps under the line.
const maxRootNames = 56

// TestRootNames holds the line on the root package's exported names: types,
// functions, variables and constants declared at the top level of its
// non-test files, each name of a const or var block counted. Methods and
// struct fields do not count.
func TestRootNames(t *testing.T) {
	names := rootNames(t)
	if len(names) > maxRootNames {
		t.Errorf("the root package exports %d top-level names, more than the %d allowed (issue 26's target is 60):\n\t%s\n"+
			"Put what someone implements or tunes rarely in a package of its own, or take a name out before adding one.",
			len(names), maxRootNames, strings.Join(names, "\n\t"))
	}
	if len(names) < maxRootNames {
		t.Logf("the root package exports %d top-level names: lower maxRootNames from %d to %d", len(names), maxRootNames, len(names))
	}
}

// rootNames returns the exported top-level names of the package in this
// directory, sorted, from the files a build for this platform compiles.
func rootNames(t *testing.T) []string {
	t.Helper()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names
}
