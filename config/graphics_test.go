package config

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestGraphicsSetting: graphics is auto, kitty or blocks, per profile too;
// anything else is refused naming the setting.
func TestGraphicsSetting(t *testing.T) {
	f, err := Load(write(t, "graphics = \"blocks\"\n[profiles.\"alice/1\"]\ngraphics = \"kitty\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.For(engine.MustParseAddress("alice/1")).Graphics; got != "kitty" {
		t.Fatalf("alice/1's graphics = %q, want kitty", got)
	}
	if got := f.For(engine.MustParseAddress("bob/1")).Graphics; got != "blocks" {
		t.Fatalf("bob/1's graphics = %q, want blocks", got)
	}
	if _, err := Load(write(t, "graphics = \"sixel\"\n")); err == nil || !strings.Contains(err.Error(), "graphics") {
		t.Fatalf("graphics = sixel: %v, want an error naming graphics", err)
	}
}
