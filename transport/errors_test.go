package transport

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// TestServerErrorEscaped: a relay's message reaches stderr and the TUI
// through Error, which escapes control characters even when the message
// was built without the decoder's check.
func TestServerErrorEscaped(t *testing.T) {
	e := &ServerError{Code: wire.ErrorBadRequest, Message: "no\x1b[8m hidden \u202eevil"}
	got := e.Error()
	if strings.IndexFunc(got, wire.IsControl) >= 0 {
		t.Fatalf("Error() = %q, holds a control character", got)
	}
	if want := `no\u001b[8m hidden \u202eevil`; got != want {
		t.Fatalf("Error() = %s, want %s", got, want)
	}
}
