package tui

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoDemoImport keeps the chat below the demo: no package of tui outside
// tui/demo (tests included) imports tui/demo, which wraps the chat's model
// and reaches it only through the seam (seam.go).
func TestNoDemoImport(t *testing.T) {
	const demo = "github.com/parley-chat/parley/tui/demo"
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" || path == "demo" {
			return filepath.SkipDir
		}
		pkg, err := build.Default.ImportDir(path, 0)
		if _, ok := err.(*build.NoGoError); ok {
			return nil
		} else if err != nil {
			return err
		}
		n++
		for _, imps := range [][]string{pkg.Imports, pkg.TestImports, pkg.XTestImports} {
			for _, imp := range imps {
				if imp == demo || strings.HasPrefix(imp, demo+"/") {
					t.Errorf("%s imports %s; the chat must not depend on the demo", path, imp)
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
