package layout

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Terminals disagree on how many cells some grapheme clusters take. The
// panels measure by cluster (as lipgloss and the bubbles do): 👍🏽 is two
// cells. A terminal that measures code point by code point (tmux 3.3,
// xterm) draws it in four, and a line measured as exactly the window's
// width wraps, pushing the whole screen down until the next resize. The
// clusters they disagree on are those joined by a zero-width joiner, a
// variation selector, a skin-tone modifier, a keycap or tag characters.
// Cells rewrites those clusters, in a finished frame, into a form every
// terminal measures alike, padded with spaces to the cluster's width, so
// that the layout computed for the frame stays exact: a skin tone, a
// variation selector or a keycap into its first code point (👍🏽 as 👍,
// the same emoji in its default colour; 1️⃣ as 1), and a cluster joined by
// a zero-width joiner or tag characters into the replacement character
// (U+FFFD): its first code point would be another emoji (a family's is a
// man, 👩‍💻's a woman, England's flag a black one).

// joining reports whether r makes its cluster width-ambiguous.
func joining(r rune) bool {
	switch {
	case r == 0x200d, // zero-width joiner
		r == 0xfe0e, r == 0xfe0f, // variation selectors 15 and 16
		r == 0x20e3,                  // combining enclosing keycap
		r >= 0x1f3fb && r <= 0x1f3ff, // skin-tone modifiers
		r >= 0xe0020 && r <= 0xe007f: // tag characters
		return true
	}
	return false
}

// Cells returns frame with every width-ambiguous cluster rewritten (see
// above); escape sequences are copied as they are. A frame without such a
// cluster is returned unchanged.
func Cells(frame string) string {
	i := strings.IndexFunc(frame, joining)
	if i < 0 {
		return frame
	}
	// Start from the beginning of the line that holds the first one: a
	// cluster never spans a line.
	start := strings.LastIndexByte(frame[:i], '\n') + 1
	var b strings.Builder
	b.Grow(len(frame) + 16)
	b.WriteString(frame[:start])
	s := frame[start:]
	for len(s) > 0 {
		c := s[0]
		switch {
		case c == ansi.ESC:
			n := escapeLen(s)
			b.WriteString(s[:n])
			s = s[n:]
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			s = s[1:]
		default:
			cluster, w := ansi.FirstGraphemeCluster(s, ansi.GraphemeWidth)
			if cluster == "" {
				cluster = s[:1]
			}
			b.WriteString(plainCluster(cluster, w))
			s = s[len(cluster):]
		}
	}
	return b.String()
}

// replacement stands for a cluster whose first code point is another
// emoji: it says that something is there which this terminal cannot be
// trusted to draw (the event log quotes it whole).
const replacement = "\ufffd"

// composes reports whether r joins emoji into another one: a zero-width
// joiner or a tag character.
func composes(r rune) bool { return r == 0x200d || r >= 0xe0020 && r <= 0xe007f }

// plainCluster is cluster itself, or, when it joins several code points in
// a width-ambiguous way, its plain form (above) padded to w cells.
func plainCluster(cluster string, w int) string {
	first, size := utf8.DecodeRuneInString(cluster)
	if size == len(cluster) || strings.IndexFunc(cluster, joining) < 0 {
		return cluster
	}
	head := string(first)
	if strings.ContainsFunc(cluster, composes) {
		head = replacement
	}
	if joining(first) || ansi.StringWidth(head) > w || ansi.StringWidth(head) == 0 {
		head = ""
	}
	return head + strings.Repeat(" ", w-ansi.StringWidth(head))
}

// escapeLen is the length of the escape sequence at the start of s: a CSI
// (ESC [ … final byte), an OSC or other string (ESC ] … BEL or ESC \), or
// ESC and one byte.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case ']', 'P', '_', '^':
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == ansi.ESC && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	return 2
}

// Quote puts s, already Cleaned, in double quotes for a line of text, as
// %q would but keeping every printable character and the joiners of
// clusters as they are: %q writes a ZWJ family as 👨\u200d👩\u200d👧,
// which says nothing to a reader. A quote or backslash in s is escaped;
// any other character that does not print is written as \uXXXX.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case unicode.IsPrint(r) || joining(r) || unicode.In(r, unicode.Mn, unicode.Me):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
