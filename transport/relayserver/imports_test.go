package relayserver

import (
	"go/build"
	"strings"
	"testing"
)

// TestServerImports keeps the server apart from the client: relayserver
// (tests aside) imports neither transport nor the profile's store, the
// profile wiring or the interface. Client and server meet only in wire.
func TestServerImports(t *testing.T) {
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{
		"github.com/parley-chat/parley/transport",
		"github.com/parley-chat/parley/store",
		"github.com/parley-chat/parley/profile",
		"github.com/parley-chat/parley/tui",
	}
	for _, imp := range pkg.Imports {
		for _, f := range forbidden {
			if imp == f || strings.HasPrefix(imp, f+"/") && !strings.HasPrefix(imp, "github.com/parley-chat/parley/transport/relaystore") {
				t.Errorf("relayserver imports %s; it must not depend on it", imp)
			}
		}
	}
}
