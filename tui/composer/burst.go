package composer

import (
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
)

// A paste in a terminal without bracketed paste arrives as one key message
// per character. The textarea rewraps the whole line on each (and the
// pane measures it again), so 5,000 characters cost 5,000 rewraps of a
// line that grows to 5,000: seconds. Printable keys are therefore
// gathered and inserted together at most once a frame (burstDelay), or at
// once before any other key: what a person types shows a frame later at
// most; a paste costs one rewrap per frame.

// burstDelay is how long printable keys gather before they are inserted:
// about a frame.
const burstDelay = 16 * time.Millisecond

// burstMsg inserts the gathered keys.
type burstMsg struct{}

// plainKey reports whether k is one printable character typed, the kind a
// paste without brackets is made of.
func plainKey(k tea.KeyMsg) bool {
	switch k.Type {
	case tea.KeySpace:
		return !k.Alt
	case tea.KeyRunes:
		return !k.Alt && !k.Paste && len(k.Runes) == 1 && k.Runes[0] >= ' ' && k.Runes[0] != 0x7f
	}
	return false
}

// gather keeps k's character for the next insertion and arms it.
func (m *Model) gather(k tea.KeyMsg) tea.Cmd {
	r := ' '
	if k.Type == tea.KeyRunes {
		r = k.Runes[0]
	}
	m.pend = append(m.pend, r)
	if m.armed {
		return nil
	}
	m.armed = true
	return tea.Tick(burstDelay, func(time.Time) tea.Msg { return burstMsg{} })
}

// flush inserts the gathered characters at the cursor.
func (m *Model) flush() {
	if len(m.pend) == 0 {
		return
	}
	m.ta.InsertString(string(m.pend))
	m.pend = m.pend[:0]
	if m.ta.Focused() {
		m.ta, _ = m.ta.Update(nil) // scrolls to the cursor
	}
	m.edited()
}

// changed measures the text again after it changed: its size and the
// lines it wants.
func (m *Model) changed() {
	m.rev++
	v := m.ta.Value()
	m.size = len(v)
	m.lines = countLines(v, m.w-ansi.StringWidth(m.ta.Prompt)-1)
}

// edited is changed after a key: an error about the text (too large) goes
// once the text is within the current mode's limit (a reply's or an
// edit's is below a message's).
func (m *Model) edited() {
	m.changed()
	if m.note != "" && !strings.HasPrefix(m.ta.Value(), AttachPrefix) {
		m.note = ""
	}
	if m.size <= m.limit() && m.err != "" && m.entered == 0 {
		m.err = ""
	}
}

// Flush inserts the printable keys gathered for the next frame now (the
// program does it a frame after the first of them, or before any other
// key).
func (m *Model) Flush() { m.flush() }

// countLines is how many lines text takes wrapped at w cells, at least 2
// and at most MaxLines.
func countLines(text string, w int) int {
	w = max(w, 1)
	n := 0
	for _, l := range strings.Split(text, "\n") {
		n += max((ansi.StringWidth(l)+w-1)/w, 1)
		if n >= MaxLines {
			return MaxLines
		}
	}
	return max(n, 2)
}

// withPending is the text with the gathered characters inserted at the
// cursor, as it will be after the next insertion.
func (m Model) withPending() string {
	v := m.ta.Value()
	if len(m.pend) == 0 {
		return v
	}
	info := m.ta.LineInfo()
	row, col := m.ta.Line(), info.StartColumn+info.ColumnOffset
	lines := strings.Split(v, "\n")
	if row < 0 || row >= len(lines) {
		return v + string(m.pend)
	}
	rs := []rune(lines[row])
	col = min(max(col, 0), len(rs))
	lines[row] = string(rs[:col]) + string(m.pend) + string(rs[col:])
	return strings.Join(lines, "\n")
}

// Pending is what was typed and waits for the frame's insertion.
func (m Model) Pending() string { return string(m.pend) }

// viewCache is the last frame the composer drew and what it drew it from.
type viewCache struct {
	key viewKey
	s   string
	ok  bool
}

// viewKey is everything a frame depends on: the textarea by its revision,
// the rest by value.
type viewKey struct {
	rev, w, h, size, queued  int
	focus                    bool
	peer                     engine.Address
	blocked, err, note, mode string
}

func (m Model) viewKey() viewKey {
	return viewKey{rev: m.rev, w: m.w, h: m.h, size: m.size, queued: m.entered, focus: m.focus,
		peer: m.peer, blocked: m.blocked, err: m.err, note: m.note, mode: m.mode.quote}
}
