package engine

import (
	"go/build"
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
