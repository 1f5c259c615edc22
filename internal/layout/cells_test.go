package layout

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
)

// codePointWidth is how a terminal that measures code point by code point
// (tmux 3.3, xterm) lays s out: escape sequences take nothing, joiners,
// selectors and combining marks nothing, everything else its own width.
func codePointWidth(s string) int {
	s = ansi.Strip(s)
	w := 0
	for _, r := range s {
		if r == 0x200d || r == 0xfe0e || r == 0xfe0f || r == 0x20e3 || (r >= 0xe0020 && r <= 0xe007f) {
			continue
		}
		w += runewidth.RuneWidth(r)
	}
	return w
}

// TestCellsAgree: after Cells, a line takes as many cells measured by
// cluster (the layout) as measured code point by code point (a plain
// terminal), and exactly what it took by cluster before.
func TestCellsAgree(t *testing.T) {
	for _, s := range []string{
		"thumbs 👍🏽 up",                        // skin tone
		"family 👨‍👩‍👧 here",                   // ZWJ sequence
		"coder 👩🏽‍💻 and 🏳️‍🌈 flag",            // ZWJ with a tone; flag with VS16 and ZWJ
		"flags 🇫🇷🇯🇵 ok",                       // regional indicators
		"heart ❤️ and ☺️ and 1️⃣",             // variation selectors, keycap
		"中文 and 日本語",                          // CJK
		"e\u0301 combining and n\u0303",       // combining marks
		"\x1b[1mbold 👍🏽\x1b[0m │ next 👍🏽 col", // styled, next to a separator
		"tag 🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f flag",
		"lone modifier 🏽 stays",
	} {
		out := Cells(s)
		if got, want := ansi.StringWidth(out), ansi.StringWidth(s); got != want {
			t.Errorf("%q: %d cells by cluster after, %d before", s, got, want)
		}
		if got, want := codePointWidth(out), ansi.StringWidth(out); got != want {
			t.Errorf("%q -> %q: %d cells code point by code point, %d by cluster", s, out, got, want)
		}
		if strings.Contains(s, "\x1b[1m") && !strings.Contains(out, "\x1b[1m") {
			t.Errorf("%q: an escape sequence was lost: %q", s, out)
		}
	}
}

func TestCellsLeavesPlainFramesAlone(t *testing.T) {
	s := "plain │ frame · with … box drawing 中文 é\nsecond line"
	if out := Cells(s); out != s {
		t.Fatalf("changed %q into %q", s, out)
	}
}

// TestPlainNeverAnotherEmoji: the plain form of a cluster is the same emoji
// (a skin tone or a variation selector dropped, a keycap's character) or
// the replacement character, never the first code point of a joined
// sequence, which is another emoji.
func TestPlainNeverAnotherEmoji(t *testing.T) {
	for _, tc := range []struct{ in, want, never string }{
		{"👍🏽", "👍", ""},
		{"👨\u200d👩\u200d👧", "\ufffd ", "👨"},
		{"👩🏽\u200d💻", "\ufffd ", "👩"},
		{"🏳️\u200d🌈", "\ufffd ", "🏳"},
		{"🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "\ufffd ", "🏴"},
		{"❤️", "❤ ", ""},
		{"1️⃣", "1", ""},
	} {
		out := Cells("a " + tc.in + " b")
		if want := "a " + tc.want + " b"; out != want {
			t.Errorf("%q is drawn %q, want %q", tc.in, out, want)
		}
		if tc.never != "" && strings.Contains(out, tc.never) {
			t.Errorf("%q is drawn as another emoji, %q: %q", tc.in, tc.never, out)
		}
	}
}
