package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyTheEngineReleases keeps the protocol's ordering in one place:
// outside package engine, no code calls a relay's Release, except a method
// named Release that forwards it (a relay wrapper) and tests. The engine's
// loop releases exactly the leases it staged. Only files that import the
// engine or the relay client (transport) can hold a relay to release
// leases on; the relay server's own lease table (relaystore) has a Release
// of its own, the other side of the same lease, which this does not bind.
func TestOnlyTheEngineReleases(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || path == filepath.Join("..", "engine")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		if !importsClient(f) {
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || (fn.Recv != nil && fn.Name.Name == "Release") {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Release" {
					t.Errorf("%s: %s calls Release; only the engine's loop releases relay leases", fset.Position(call.Pos()), fn.Name.Name)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d files; the walk is broken", checked)
	}
}

// importsClient reports whether f imports the engine or the relay client.
func importsClient(f *ast.File) bool {
	for _, imp := range f.Imports {
		switch strings.Trim(imp.Path.Value, `"`) {
		case "github.com/parley-chat/parley/engine", "github.com/parley-chat/parley/transport":
			return true
		}
	}
	return false
}
