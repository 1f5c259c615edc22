package requests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
)

var (
	carol   = engine.MustParseAddress("carol/1")
	mallory = engine.MustParseAddress("mallory/1")
	at      = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
)

// fakeSource holds requests in memory and records what was asked of it.
type fakeSource struct {
	list     []engine.Request
	accepted []engine.Address
	rejected []engine.Address
	blocked  []engine.Address
	err      error
}

func (f *fakeSource) Requests(context.Context) ([]engine.Request, error) {
	return append([]engine.Request(nil), f.list...), nil
}

func (f *fakeSource) AcceptRequest(_ context.Context, p engine.Address) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	f.accepted = append(f.accepted, p)
	return f.drop(p), nil
}

func (f *fakeSource) RejectRequest(_ context.Context, p engine.Address, block bool) error {
	if f.err != nil {
		return f.err
	}
	if block {
		f.blocked = append(f.blocked, p)
	} else {
		f.rejected = append(f.rejected, p)
	}
	f.drop(p)
	return nil
}

func (f *fakeSource) drop(p engine.Address) int {
	for i, r := range f.list {
		if r.Peer == p {
			f.list = append(f.list[:i], f.list[i+1:]...)
			return r.Count
		}
	}
	return 0
}

// settle runs cmd and feeds what it returns back into m, until nothing is
// left to run.
func settle(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	for i := 0; cmd != nil; i++ {
		if i > 10 {
			t.Fatal("commands never settle")
		}
		m, cmd = m.Update(cmd())
	}
	return m
}

func press(s string) tea.KeyMsg {
	if s == "esc" {
		return tea.KeyMsg{Type: tea.KeyEsc}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func newModel(t *testing.T, src *fakeSource) Model {
	t.Helper()
	lipgloss.SetColorProfile(termenv.Ascii)
	m := New(context.Background(), src, themes.MustGet("dark"))
	m.SetSize(120, 10)
	m.Focus()
	return settle(t, m, m.Reload())
}

func twoRequests() *fakeSource {
	return &fakeSource{list: []engine.Request{
		{Peer: carol, FirstSeen: at, Count: 2, Preview: "hi bob"},
		{Peer: mallory, FirstSeen: at.Add(time.Minute), Count: 1, Preview: "buy \x1b[2J\u202enow\x07"},
	}}
}

// TestListShowsRequests: each request's sender, count, first seen and
// preview, which is cleaned again before the terminal.
func TestListShowsRequests(t *testing.T) {
	m := newModel(t, twoRequests())
	v := m.View()
	for _, want := range []string{"Requests · 2", `▸ carol/1 · 2 messages · first seen 12:00:00 · "hi bob"`, `mallory/1 · 1 message · first seen 12:01:00 · "buy [2Jnow"`} {
		if !strings.Contains(v, want) {
			t.Errorf("the panel does not show %q:\n%s", want, v)
		}
	}
	for _, bad := range []string{"\x1b", "\u202e", "\x07"} {
		if strings.Contains(v, bad) {
			t.Errorf("a control character %q reached the screen", bad)
		}
	}
	if m.Total() != 2 {
		t.Errorf("Total = %d, want 2", m.Total())
	}
}

// TestKeysAct: a accepts, r rejects, b asks and y blocks, each the request
// under the cursor; n keeps it.
func TestKeysAct(t *testing.T) {
	cases := []struct {
		name                       string
		keys                       []string
		accepted, rejected, blocks int
		left                       int
		status                     string
	}{
		{"accept", []string{"a"}, 1, 0, 0, 1, "accepted carol/1: 2 messages now in the conversation"},
		{"reject", []string{"r"}, 0, 1, 0, 1, "rejected carol/1"},
		{"block asks, n keeps", []string{"b", "n"}, 0, 0, 0, 2, "kept the request of carol/1"},
		{"block asks, esc keeps", []string{"b", "esc"}, 0, 0, 0, 2, "kept the request of carol/1"},
		{"block asks, y blocks", []string{"b", "y"}, 0, 0, 1, 1, "rejected and blocked carol/1"},
		{"the second one", []string{"j", "b", "y"}, 0, 0, 1, 1, "rejected and blocked mallory/1"},
		{"y alone does nothing", []string{"y"}, 0, 0, 0, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := twoRequests()
			m := newModel(t, src)
			for _, k := range c.keys {
				var cmd tea.Cmd
				m, cmd = m.Update(press(k))
				m = settle(t, m, cmd)
			}
			if len(src.accepted) != c.accepted || len(src.rejected) != c.rejected || len(src.blocked) != c.blocks {
				t.Fatalf("accepted %v, rejected %v, blocked %v; want %d, %d, %d", src.accepted, src.rejected, src.blocked, c.accepted, c.rejected, c.blocks)
			}
			if m.Total() != c.left {
				t.Fatalf("%d requests left, want %d", m.Total(), c.left)
			}
			if c.status != "" && !strings.Contains(m.View(), c.status) {
				t.Fatalf("the panel does not say %q:\n%s", c.status, m.View())
			}
		})
	}
}

// TestBlockAsks: the question names the sender, and leaving the panel
// cancels it.
func TestBlockAsks(t *testing.T) {
	src := twoRequests()
	m := newModel(t, src)
	m, _ = m.Update(press("b"))
	if v := m.View(); !strings.Contains(v, "reject and block carol/1?") {
		t.Fatalf("b did not ask:\n%s", v)
	}
	m.Blur()
	m.Focus()
	m, cmd := m.Update(press("y"))
	m = settle(t, m, cmd)
	if len(src.blocked) != 0 || m.Total() != 2 {
		t.Fatalf("a question left behind blocked %v", src.blocked)
	}
}

// TestFailureShown: an action the engine refuses says why and keeps the
// request.
func TestFailureShown(t *testing.T) {
	src := twoRequests()
	m := newModel(t, src)
	src.err = errors.New("disk full")
	m, cmd := m.Update(press("a"))
	m = settle(t, m, cmd)
	if v := m.View(); !strings.Contains(v, "accept carol/1 failed") || m.Total() != 2 {
		t.Fatalf("a failed accept:\n%s", v)
	}
}

// TestEventsReload: the events that change the requests read them again;
// others do not.
func TestEventsReload(t *testing.T) {
	src := &fakeSource{}
	m := newModel(t, src)
	src.list = twoRequests().list
	if _, cmd := m.Update(engine.Event{Kind: engine.EventSent, Peer: carol}); cmd != nil {
		t.Fatal("a sent message read the requests")
	}
	for _, e := range []engine.Event{
		{Kind: engine.EventRequest, Peer: carol},
		{Kind: engine.EventReceived, Result: &engine.ReceiveResult{Kind: engine.ResultRequest, Sender: carol}},
		{Kind: engine.EventRequestAccepted, Peer: carol},
		{Kind: engine.EventRequestsSwept, Count: 1},
	} {
		m2, cmd := m.Update(e)
		if m2 = settle(t, m2, cmd); m2.Total() != 2 {
			t.Fatalf("event %d left %d requests shown, want 2", e.Kind, m2.Total())
		}
	}
}
