// Package pagedlist is what the inbox and the outbox share: a list of
// pending messages read from the store one page at a time, with a cursor,
// the page's position (pager), reads that coalesce while one is in flight,
// a question waiting for yes or no, a busy flag for the one action in
// flight, and a status line that expires. The panels keep what differs:
// what they read, their actions and how a row is drawn. It imports no
// panel and no engine type: a list is of any T with a sequence number.
package pagedlist

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/pager"
)

// StatusLifetime is how long a list's status line stays; the event log
// keeps what it said.
const StatusLifetime = 8 * time.Second

// Loaded carries a page of a list, the list's total and the position the
// page was read at.
type Loaded[T any] struct {
	After int64
	Page  []T
	Total int
	Err   error
}

// Keys move the cursor and the page, and answer a question.
type Keys struct {
	Up       key.Binding
	Down     key.Binding
	NextPage key.Binding
	PrevPage key.Binding
	Confirm  key.Binding
	Cancel   key.Binding
}

// DefaultKeys returns the keys of a paged list; the answers are enabled
// while a question waits.
func DefaultKeys() Keys {
	return Keys{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next")),
		NextPage: key.NewBinding(key.WithKeys("pgdown", "right", "l"), key.WithHelp("pgdn", "next page")),
		PrevPage: key.NewBinding(key.WithKeys("pgup", "left", "h"), key.WithHelp("pgup", "previous page")),
		Confirm:  key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes"), key.WithDisabled()),
		Cancel:   key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "no"), key.WithDisabled()),
	}
}

// List is one paged list of T; seq gives an item's sequence number, the
// position the next page starts after. The zero value is not usable: New.
type List[T any] struct {
	seq      func(T) int64
	keys     Keys
	pg       pager.Pager
	page     []T
	total    int
	sel      int
	h        int
	err      string
	ask      int // the question waiting (0: none), as the panel numbers them
	busy     bool
	status   string
	statusAt time.Time

	loading, again bool
}

// New returns an empty list on its first page.
func New[T any](seq func(T) int64) List[T] {
	return List[T]{seq: seq, keys: DefaultKeys()}
}

// Keys returns the list's keys (the answers enabled while a question
// waits), for the panel's help.
func (l List[T]) Keys() Keys { return l.keys }

// Reset forgets the reads and the action in flight: the source changed
// (a reopen) and what they return is dropped by the caller.
func (l *List[T]) Reset() { l.loading, l.again, l.busy = false, false, false }

// SetHeight sets the panel's height, title included; it reports whether
// the page size changed (the page must be read again).
func (l *List[T]) SetHeight(h int) bool {
	rows := l.Rows()
	l.h = h
	return l.Rows() != rows
}

// Rows is the page size: the panel's height less the title and, when
// there is room for it, a status line.
func (l List[T]) Rows() int {
	if l.h >= 4 {
		return l.h - 2
	}
	return max(l.h-1, 1)
}

// Total is the list's length at the last read.
func (l List[T]) Total() int { return l.total }

// Page returns the items shown.
func (l List[T]) Page() []T { return l.page }

// Cursor is the index in the page of the item under the cursor.
func (l List[T]) Cursor() int { return l.sel }

// Selected returns the item under the cursor.
func (l List[T]) Selected() (T, bool) {
	if l.sel < len(l.page) {
		return l.page[l.sel], true
	}
	var zero T
	return zero, false
}

// Read starts a read of the current page: ok is false while one is in
// flight, which is then read again once it lands (reads coalesce).
func (l *List[T]) Read() (after int64, limit int, ok bool) {
	if l.loading {
		l.again = true
		return 0, 0, false
	}
	l.loading = true
	return l.pg.After(), l.Rows(), true
}

// Loaded takes a page read; it reports whether the list must be read
// again (the page moved while reading, the page came back empty and there
// is one before it, or another read was asked for meanwhile).
func (l *List[T]) Loaded(msg Loaded[T], errText func(error) string) (again bool) {
	l.loading = false
	if msg.After != l.pg.After() {
		return true
	}
	if msg.Err != nil {
		l.err = errText(msg.Err)
	} else {
		l.err = ""
		l.page, l.total = msg.Page, msg.Total
		if len(l.page) == 0 && l.pg.Prev() {
			return true
		}
		l.sel = layout.Clamp(l.sel, 0, max(len(l.page)-1, 0))
	}
	if l.again {
		l.again = false
		return true
	}
	return false
}

// Move handles the cursor and paging keys: handled reports that k was one
// of them, read that the page moved and must be read.
func (l *List[T]) Move(k tea.KeyMsg) (handled, read bool) {
	switch {
	case input.Matches(k, l.keys.Up):
		if l.sel > 0 {
			l.sel--
		} else if l.pg.Prev() {
			l.sel = l.Rows() - 1
			return true, true
		}
	case input.Matches(k, l.keys.Down):
		if l.sel+1 < len(l.page) {
			l.sel++
		} else if len(l.page) == l.Rows() {
			l.next()
			return true, true
		}
	case input.Matches(k, l.keys.NextPage):
		if len(l.page) == l.Rows() {
			l.next()
			return true, true
		}
	case input.Matches(k, l.keys.PrevPage):
		if l.pg.Prev() {
			l.sel = 0
			return true, true
		}
	default:
		return false, false
	}
	return true, false
}

func (l *List[T]) next() {
	l.pg.Next(l.seq(l.page[len(l.page)-1]))
	l.sel = 0
}

// Ask puts question q (non-zero, numbered by the panel) to the user; 0
// withdraws it.
func (l *List[T]) Ask(q int) {
	l.ask = q
	l.keys.Confirm.SetEnabled(q != 0)
	l.keys.Cancel.SetEnabled(q != 0)
}

// Asking is the question waiting, or 0.
func (l List[T]) Asking() int { return l.ask }

// Answer takes k while a question waits: waiting reports that one did
// (every key is then the answer's), yes is the question confirmed.
func (l *List[T]) Answer(k tea.KeyMsg) (waiting bool, yes int) {
	if l.ask == 0 {
		return false, 0
	}
	switch {
	case input.Matches(k, l.keys.Confirm):
		yes = l.ask
		l.Ask(0)
	case input.Matches(k, l.keys.Cancel):
		l.Ask(0)
	}
	return true, yes
}

// Start marks an action in flight; it reports false when one already is.
func (l *List[T]) Start() bool {
	if l.busy {
		return false
	}
	l.busy = true
	return true
}

// Busy reports whether an action is in flight.
func (l List[T]) Busy() bool { return l.busy }

// Finish ends the action in flight and shows status until it expires.
func (l *List[T]) Finish(status string) {
	l.busy = false
	l.SetStatus(status)
}

// SetStatus shows status until it expires.
func (l *List[T]) SetStatus(status string) {
	l.status, l.statusAt = status, time.Now()
}

// ExpireStatus clears a status line older than StatusLifetime.
func (l *List[T]) ExpireStatus(now time.Time) {
	if l.status != "" && now.Sub(l.statusAt) >= StatusLifetime {
		l.status = ""
	}
}

// Err is what the last read failed with, or "".
func (l List[T]) Err() string { return l.err }

// Detail is the title's detail: what the list holds, and the page when
// there is more than one.
func (l List[T]) Detail(what string) string {
	detail := fmt.Sprintf("%d %s", l.total, what)
	if pages := pager.Pages(l.total, l.Rows()); pages > 1 {
		detail += fmt.Sprintf(" · page %d/%d", l.pg.Index(), pages)
	}
	return detail
}

// Lines adds to lines (the title and any notice) a row per item, as many
// as the page holds, and the status line at the bottom when there is room;
// w is the panel's width.
func (l List[T]) Lines(lines []string, w int, row func(i int, item T) string, status lipgloss.Style) []string {
	for i, item := range l.page {
		if len(lines) >= 1+l.Rows() {
			break
		}
		lines = append(lines, row(i, item))
	}
	if l.status != "" && l.h >= 4 {
		for len(lines) < l.h-1 {
			lines = append(lines, "")
		}
		lines = append(lines, status.Render(layout.Line(" "+l.status, w)))
	}
	return lines
}
