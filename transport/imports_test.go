package transport

import (
	"go/build"
	"strings"
	"testing"
)

// TestClientImports keeps the client apart from the server: transport
// (tests aside) imports nothing under transport/ (the server and its
// storage), nor the profile's store or the interface.
func TestClientImports(t *testing.T) {
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{
		"github.com/parley-chat/parley/transport/",
		"github.com/parley-chat/parley/store",
		"github.com/parley-chat/parley/tui",
	}
	for _, imp := range pkg.Imports {
		for _, f := range forbidden {
			if strings.HasPrefix(imp, f) {
				t.Errorf("transport imports %s; it must not depend on it", imp)
			}
		}
	}
}
