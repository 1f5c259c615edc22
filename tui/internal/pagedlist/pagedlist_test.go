package pagedlist

import (
	"errors"
	"github.com/charmbracelet/lipgloss"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

func items(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func newList(h int) List[int] {
	l := New(func(i int) int64 { return int64(i) })
	l.SetHeight(h)
	return l
}

// TestReadsCoalesce: a read asked for while one is in flight starts once
// the first lands, not before.
func TestReadsCoalesce(t *testing.T) {
	l := newList(6)
	if _, limit, ok := l.Read(); !ok || limit != 4 {
		t.Fatalf("the first read: ok %v, limit %d; want ok, 4 rows", ok, limit)
	}
	if _, _, ok := l.Read(); ok {
		t.Fatal("a second read started while the first was in flight")
	}
	if again := l.Loaded(Loaded[int]{Page: items(1, 4), Total: 10}, nil); !again {
		t.Fatal("the coalesced read was not asked for when the first landed")
	}
	if _, _, ok := l.Read(); !ok {
		t.Fatal("no read could start after the first landed")
	}
	if again := l.Loaded(Loaded[int]{Page: items(1, 4), Total: 10}, nil); again {
		t.Fatal("a read was asked for again with nothing pending")
	}
}

// TestPaging: down past a full page moves to the next, which starts after
// the last item's sequence; up from its top comes back.
func TestPaging(t *testing.T) {
	l := newList(4) // 2 rows
	l.Read()
	l.Loaded(Loaded[int]{Page: items(1, 2), Total: 5}, nil)
	down := tea.KeyMsg{Type: tea.KeyDown}
	if _, read := l.Move(down); read || l.Cursor() != 1 {
		t.Fatalf("down on the first row: read %v, cursor %d; want no read, cursor 1", read, l.Cursor())
	}
	if _, read := l.Move(down); !read {
		t.Fatal("down on the last row of a full page did not move the page")
	}
	after, _, _ := l.Read()
	if after != 2 {
		t.Fatalf("the next page starts after %d, want 2", after)
	}
	l.Loaded(Loaded[int]{After: 2, Page: items(3, 2), Total: 5}, nil)
	if got := l.Detail("things"); got != "5 things · page 2/3" {
		t.Fatalf("detail %q", got)
	}
	if _, read := l.Move(tea.KeyMsg{Type: tea.KeyUp}); !read || l.Cursor() != 1 {
		t.Fatalf("up from the top: read %v, cursor %d; want a read, cursor on the last row", read, l.Cursor())
	}
}

// TestAskAndStatus: a question takes every key until answered; a status
// line expires.
func TestAskAndStatus(t *testing.T) {
	l := newList(6)
	l.Ask(2)
	if !l.Keys().Confirm.Enabled() {
		t.Fatal("the answers are not enabled while a question waits")
	}
	if waiting, yes := l.Answer(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")}); !waiting || yes != 0 {
		t.Fatalf("another key: waiting %v, yes %d; want waiting, no answer", waiting, yes)
	}
	if _, yes := l.Answer(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")}); yes != 2 || l.Asking() != 0 {
		t.Fatalf("y: yes %d, asking %d; want 2, none", yes, l.Asking())
	}
	if !l.Start() || l.Start() {
		t.Fatal("a second action started while one was in flight")
	}
	l.Finish("done")
	l.ExpireStatus(time.Now())
	if lines := l.Lines(nil, 20, func(int, int) string { return "" }, l0style); len(lines) == 0 {
		t.Fatal("the status line went at once")
	}
	l.ExpireStatus(time.Now().Add(StatusLifetime))
	if lines := l.Lines(nil, 20, func(int, int) string { return "" }, l0style); len(lines) != 0 {
		t.Fatalf("the status line outlived its lifetime: %q", lines)
	}
	l.Read()
	l.Loaded(Loaded[int]{Err: errors.New("boom")}, func(err error) string { return "read: " + err.Error() })
	if l.Err() != "read: boom" {
		t.Fatalf("err %q", l.Err())
	}
}

var l0style = lipgloss.NewStyle()
