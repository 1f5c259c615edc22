package tui

import (
	"fmt"
	"os"
	"strings"

	"github.com/parley-chat/parley/internal/layout"
)

// Emoji says how clusters that terminals measure differently (a skin tone,
// a ZWJ family, a keycap, a flag of tags) are drawn. The layout measures
// every cluster as one glyph (👍🏽 takes two cells); a terminal that
// measures code point by code point (tmux 3.3, xterm) would draw it in
// four and break the screen, so there such a cluster is drawn in a plain
// form padded to the same cells (layout.Cells: 👍🏽 as 👍, a family as the
// replacement character, never as its first member). Where the terminal
// measures as the layout does, the whole cluster is drawn and keeps its
// meaning.
type Emoji string

// The emoji modes.
const (
	// EmojiAuto (the zero value) draws whole clusters on terminals known
	// to measure them as the layout does (WezTerm, Ghostty, which cluster
	// graphemes: mode 2027) and plain ones elsewhere, tmux included.
	EmojiAuto Emoji = ""
	// EmojiWhole always draws the whole cluster.
	EmojiWhole Emoji = "whole"
	// EmojiPlain always draws the plain form.
	EmojiPlain Emoji = "plain"
)

// ParseEmoji reads an emoji mode: "auto" (or ""), "whole" or "plain".
func ParseEmoji(s string) (Emoji, error) {
	switch Emoji(s) {
	case EmojiAuto, "auto":
		return EmojiAuto, nil
	case EmojiWhole, EmojiPlain:
		return Emoji(s), nil
	}
	return "", fmt.Errorf("unknown emoji mode %q (auto, whole or plain)", s)
}

// whole reports whether mode draws whole clusters, asking the environment
// (getenv) for EmojiAuto (or "auto", as the settings file spells it).
func (mode Emoji) whole(getenv func(string) string) bool {
	switch mode {
	case EmojiWhole:
		return true
	case EmojiPlain:
		return false
	}
	if getenv("TMUX") != "" {
		return false // tmux measures by code point whatever the terminal outside
	}
	switch getenv("TERM_PROGRAM") {
	case "WezTerm", "ghostty":
		return true
	}
	return strings.HasSuffix(getenv("TERM"), "ghostty")
}

// SetEmoji sets how the chat draws clusters terminals disagree on (Run
// sets it from Options.Emoji; a wrapper from its own options).
func (m *Model) SetEmoji(mode Emoji) { m.wholeClusters = mode.whole(os.Getenv) }

// Frame finishes a frame for the terminal: the clusters it would measure
// unlike the layout are drawn plain, unless the terminal measures them as
// the layout does. A wrapper draws its own frame through it.
func (m Model) Frame(s string) string {
	if m.wholeClusters {
		return s
	}
	return layout.Cells(s)
}
