package engine

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineImports keeps the domain free of storage, network and UI
// libraries: engine may import only the standard library, wire and the few
// pure libraries listed here (curve arithmetic).
func TestEngineImports(t *testing.T) {
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/parley-chat/parley/wire": true,
		"filippo.io/edwards25519":            true,
		"filippo.io/edwards25519/field":      true,
		// the file stream's AEAD (filestream.go), as age's STREAM uses it
		"golang.org/x/crypto/chacha20poly1305": true,
	}
	for _, imp := range pkg.Imports {
		first := strings.SplitN(imp, "/", 2)[0]
		if !strings.Contains(first, ".") { // standard library
			continue
		}
		if !allowed[imp] {
			t.Errorf("engine imports %s; it must not depend on storage, network or UI packages", imp)
		}
	}
}

// TestTUIImports keeps the interface above the engine only: no package of
// tui (tests aside) imports the store, the transport or the profile wiring;
// main hands the demo what it needs.
func TestTUIImports(t *testing.T) {
	forbidden := []string{
		"github.com/parley-chat/parley/store",
		"github.com/parley-chat/parley/transport",
		"github.com/parley-chat/parley/profile",
	}
	n := 0
	err := filepath.WalkDir("../tui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" {
			return err
		}
		pkg, err := build.Default.ImportDir(path, 0)
		if _, ok := err.(*build.NoGoError); ok {
			return nil
		} else if err != nil {
			return err
		}
		n++
		for _, imp := range pkg.Imports {
			for _, f := range forbidden {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					t.Errorf("%s imports %s; tui must not depend on it", path, imp)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("found %d tui packages; the walk is broken", n)
	}
}

// TestOnlyTheEngineAcknowledges keeps the protocol's ordering in one place:
// outside package engine, no code calls a relay's Acknowledge, except a
// method named Acknowledge that forwards it (a relay wrapper) and tests.
// The engine's loop acknowledges exactly the leases it staged.
func TestOnlyTheEngineAcknowledges(t *testing.T) {
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
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || (fn.Recv != nil && fn.Name.Name == "Acknowledge") {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Acknowledge" {
					t.Errorf("%s: %s calls Acknowledge; only the engine's loop acknowledges relay leases", fset.Position(call.Pos()), fn.Name.Name)
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
