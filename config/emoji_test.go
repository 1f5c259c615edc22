package config

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestEmojiSetting: emoji is auto, whole or plain, per profile too; any
// other value is refused with its name.
func TestEmojiSetting(t *testing.T) {
	f, err := Load(write(t, "emoji = \"plain\"\n[profiles.\"alice/1\"]\nemoji = \"whole\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.For(engine.MustParseAddress("alice/1")).Emoji; got != "whole" {
		t.Fatalf("alice/1's emoji = %q, want whole", got)
	}
	if got := f.For(engine.MustParseAddress("bob/1")).Emoji; got != "plain" {
		t.Fatalf("bob/1's emoji = %q, want plain", got)
	}
	if _, err := Load(write(t, "emoji = \"sometimes\"\n")); err == nil || !strings.Contains(err.Error(), "emoji") {
		t.Fatalf("emoji = sometimes: %v, want an error naming emoji", err)
	}
}
