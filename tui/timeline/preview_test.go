package timeline

import (
	"testing"

	"github.com/parley-chat/parley/wire"
)

// TestPreviewsBounded: past maxPreviews the oldest picture goes; a file
// without a picture keeps none; a nil set draws nothing.
func TestPreviewsBounded(t *testing.T) {
	var p previews
	for i := range maxPreviews + 1 {
		p.add(wire.LogicalID{byte(i)}, []string{"row"})
	}
	if p.of(wire.LogicalID{0}) != nil || p.of(wire.LogicalID{maxPreviews}) == nil || len(p.lines) != maxPreviews {
		t.Fatalf("kept %d pictures; the oldest kept: %v", len(p.lines), p.of(wire.LogicalID{0}) != nil)
	}
	p.add(wire.LogicalID{200}, nil)
	if _, ok := p.lines[wire.LogicalID{200}]; ok {
		t.Fatal("a file without a picture keeps one")
	}
	var none *previews
	if none.of(wire.LogicalID{1}) != nil {
		t.Fatal("a nil set returned a picture")
	}
}
