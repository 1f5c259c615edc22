// Package layout holds the small rendering helpers the chat's panels share:
// fitting lines into a fixed box, panel titles, short IDs and clock times,
// and untrusted text made safe to draw (Clean, Quote). It draws with the
// styles it is given and defines none. It sits outside tui so that the trace
// text (internal/tracetext), which the command line prints too, draws a body
// and a time as the chat does; it imports nothing of the chat or the engine.
package layout

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/wire"
)

// Fit returns lines as exactly h lines of exactly w cells: longer lines are
// cut with an ellipsis, shorter ones padded with spaces, missing lines added
// blank and extra lines dropped. It is the one place where panels are made
// to measure, cheaply (no lipgloss layout per frame).
func Fit(lines []string, w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow((w + 1) * h)
	for i := 0; i < h; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i < len(lines) {
			b.WriteString(Line(lines[i], w))
		} else {
			b.WriteString(strings.Repeat(" ", w))
		}
	}
	return b.String()
}

// Line cuts or pads one line to exactly w cells.
func Line(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	if n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// Pad renders s in style st padded (or cut) to exactly w cells, so that a
// background colour covers the whole width.
func Pad(st lipgloss.Style, s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	return st.Render(s + strings.Repeat(" ", w-n))
}

// Title renders a panel's title line: the name, then details, across w
// cells; focused panels use the focused style.
func Title(normal, focused lipgloss.Style, isFocused bool, name, detail string, w int) string {
	// The marker keeps focus visible without colour (NO_COLOR, a plain
	// capture of the screen).
	st, text := normal, "  "+name
	if isFocused {
		st, text = focused, "▶ "+name
	}
	if detail != "" {
		text += " · " + detail
	}
	return Pad(st, text, w)
}

// Beside puts blocks of lines side by side, line by line. Every block must
// have lines of a fixed width (as Fit makes them); the result has as many
// lines as the tallest block, shorter blocks padded with spaces.
func Beside(blocks ...string) string {
	cols := make([][]string, len(blocks))
	widths := make([]int, len(blocks))
	rows := 0
	for i, b := range blocks {
		cols[i] = strings.Split(b, "\n")
		if len(cols[i]) > 0 {
			widths[i] = ansi.StringWidth(cols[i][0])
		}
		rows = max(rows, len(cols[i]))
	}
	var out strings.Builder
	for r := 0; r < rows; r++ {
		if r > 0 {
			out.WriteByte('\n')
		}
		for i := range cols {
			if r < len(cols[i]) {
				out.WriteString(cols[i][r])
			} else {
				out.WriteString(strings.Repeat(" ", widths[i]))
			}
		}
	}
	return out.String()
}

// Split cuts a body into lines.
func Split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// ShortID is the first 8 hex digits of a logical ID: enough to tell the
// messages on one screen apart; the CLI prints all 32.
func ShortID(id wire.LogicalID) string {
	return hex.EncodeToString(id[:4])
}

// Clock formats a time for a list row or the event log.
func Clock(t time.Time) string {
	if t.IsZero() {
		return "--:--:--"
	}
	return t.Local().Format("15:04:05")
}

// OneLine flattens a message body for a one-line preview.
func OneLine(body []byte, max int) string {
	s := string(body)
	if len(s) > max*4 {
		s = s[:max*4]
	}
	s = strings.ReplaceAll(Clean([]byte(s)), "\n", " ")
	if ansi.StringWidth(s) > max {
		s = ansi.Truncate(s, max, "…")
	}
	return s
}

// Clean makes an untrusted message body safe to draw: invalid UTF-8 is
// replaced, tabs become spaces, and every other control character (escape
// sequences included) is dropped, so that a peer cannot drive the terminal;
// so are the bidirectional overrides and isolates, with which a text could
// be drawn in another order than it reads. Newlines are kept.
func Clean(body []byte) string {
	s := strings.ToValidUTF8(string(body), "�")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0),
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return -1
		}
		return r
	}, s)
}

// Wrap wraps text to w cells (words first, then hard), line by line.
func Wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	return strings.Split(ansi.Wrap(s, w, ""), "\n")
}

// Width is the number of cells s takes.
func Width(s string) int { return ansi.StringWidth(s) }

// Spaces returns n spaces (none for n <= 0).
func Spaces(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat(" ", n)
}

// Clamp bounds v to [lo, hi].
func Clamp(v, lo, hi int) int {
	if v > hi {
		v = hi
	}
	if v < lo {
		v = lo
	}
	return v
}

// Clip makes a block exactly h lines tall, w cells wide for the lines it
// adds: in a tiny window the panels' minimum sizes add up to more than
// there is.
func Clip(s string, w, h int) string {
	n := strings.Count(s, "\n") + 1
	switch {
	case n > h:
		lines := strings.SplitN(s, "\n", h+1)
		return strings.Join(lines[:h], "\n")
	case n < h:
		return s + strings.Repeat("\n"+Spaces(w), h-n)
	}
	return s
}
