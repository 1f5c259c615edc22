// Searching the conversation (/, n, N) and acting on the match shown.

package timeline

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/trace"
)

func (m Model) searchKey(k tea.KeyMsg) (Model, tea.Cmd) {
	switch {
	case k.Type == tea.KeyEsc:
		m.typing = false
		m.search.Blur()
		m.resizeViewport()
		return m, nil
	case k.Type == tea.KeyEnter:
		m.typing = false
		m.search.Blur()
		m.query = strings.TrimSpace(m.search.Value())
		m.matches, m.current = nil, 0
		if m.query == "" {
			m.clearSearch()
			m.render(true)
			return m, nil
		}
		m.findMatches(false)
		m.resizeViewport()
		if len(m.matches) == 0 && m.more {
			return m, m.loadOlder()
		}
		return m, nil
	}
	if input.IsText(k) {
		input.Insert(&m.search, k.Runes)
		return m, nil
	}
	var cmd tea.Cmd
	m.search, cmd = m.search.Update(k)
	return m, cmd
}

func (m *Model) clearSearch() {
	m.query, m.matches, m.current, m.typing = "", nil, 0, false
	m.search.SetValue("")
	m.search.Blur()
	m.resizeViewport()
}

// findMatches finds the items whose text holds the query (case does not
// matter) and shows the newest one, or, after a page of older entries
// came in, the newest of those.
func (m *Model) findMatches(olderPage bool) {
	q := strings.ToLower(m.query)
	var prevOldest *int64
	if olderPage && len(m.matches) > 0 {
		if h := m.items[m.matches[0]].hist; h != nil {
			prevOldest = &h.Seq
		}
	}
	m.matches = nil
	for i, it := range m.items {
		if strings.Contains(strings.ToLower(layout.Clean(it.body())), q) {
			m.matches = append(m.matches, i)
		}
	}
	m.current = len(m.matches) - 1
	if prevOldest != nil {
		// Continue the walk back: the newest match older than the one shown.
		for j := len(m.matches) - 1; j >= 0; j-- {
			if h := m.items[m.matches[j]].hist; h != nil && h.Seq < *prevOldest {
				m.current = j
				break
			}
		}
	}
	m.render(false)
	m.showCurrent()
}

// nextMatch moves to the match dir steps away (-1: older); past the oldest
// loaded it reads an older page.
func (m *Model) nextMatch(dir int) tea.Cmd {
	if m.query == "" {
		return nil
	}
	next := m.current + dir
	if next < 0 {
		if m.more {
			return m.loadOlder()
		}
		next = len(m.matches) - 1 // wrap to the newest
	}
	if next >= len(m.matches) {
		next = 0
	}
	if len(m.matches) == 0 {
		return nil
	}
	m.current = next
	m.render(false)
	m.showCurrent()
	return nil
}

func (m *Model) showCurrent() {
	if m.current < 0 || m.current >= len(m.matches) {
		return
	}
	i := m.matches[m.current]
	if i < len(m.spans) {
		m.vp.SetYOffset(max(m.spans[i][0]-m.vp.Height/3, 0))
	}
}

// traceOfCurrent asks for the trace of the current search match, or of the
// newest message shown.
func (m Model) traceOfCurrent() tea.Cmd {
	i := len(m.items) - 1
	if m.current >= 0 && m.current < len(m.matches) {
		i = m.matches[m.current]
	}
	if i < 0 || i >= len(m.items) {
		return nil
	}
	it := m.items[i]
	msg := trace.Request{Peer: m.peer, Direction: engine.DirectionIn}
	if it.hist != nil {
		msg.ID, msg.Direction = it.hist.ID, it.hist.Direction
	} else {
		msg.ID = it.wait.ID
	}
	return func() tea.Msg { return msg }
}
