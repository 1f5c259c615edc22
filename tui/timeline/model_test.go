package timeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

var (
	bob = engine.MustParseAddress("bob/1")
	at  = time.Date(2026, 11, 2, 12, 0, 0, 0, time.Local)
)

// history is a fake store of one conversation with n entries, Seq 1..n.
type history struct {
	entries []engine.HistoryEntry
	calls   []string
}

func newHistory(n int) *history {
	h := &history{}
	for i := 1; i <= n; i++ {
		dir, state := engine.DirectionOut, engine.SentAcknowledged
		if i%2 == 0 {
			dir, state = engine.DirectionIn, 0
		}
		h.entries = append(h.entries, engine.HistoryEntry{Seq: int64(i), Peer: bob, Direction: dir, ID: wire.LogicalID{byte(i)}, At: at,
			Body: []byte(fmt.Sprintf("message %d", i)), State: state})
	}
	return h
}

func (h *history) History(_ context.Context, peer engine.Address, before int64, limit int) ([]engine.HistoryEntry, error) {
	h.calls = append(h.calls, fmt.Sprintf("before=%d limit=%d", before, limit))
	var out []engine.HistoryEntry
	for i := len(h.entries) - 1; i >= 0 && len(out) < limit; i-- {
		if before == 0 || h.entries[i].Seq < before {
			out = append(out, h.entries[i])
		}
	}
	return out, nil
}

func load(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	if cmd == nil {
		t.Fatal("no read started")
	}
	m, _ = m.Update(cmd())
	return m
}

func TestPagesFromTheStore(t *testing.T) {
	h := newHistory(250)
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(60, 10)
	m.Focus()
	m = load(t, m, m.SetPeer(bob))
	if got := len(m.Entries()); got != PageSize {
		t.Fatalf("%d entries after the first read, want a page of %d", got, PageSize)
	}
	if v := m.View(); !strings.Contains(v, "message 250") || strings.Contains(v, "message 150 ") {
		t.Fatalf("the newest entries are not at the bottom:\n%s", v)
	}
	// Home goes to the oldest loaded entry and reads the page before it.
	m, cmd := m.Update(tea.KeyMsg{Type: tea.KeyHome})
	m = load(t, m, cmd)
	if got := len(m.Entries()); got != 2*PageSize || m.Entries()[0].Seq != 51 {
		t.Fatalf("after the older page: %d entries from seq %d, want 200 from 51", got, m.Entries()[0].Seq)
	}
	if want := "before=151 limit=100"; h.calls[len(h.calls)-1] != want {
		t.Fatalf("older page read %q, want %q", h.calls[len(h.calls)-1], want)
	}
	// At the top, up reads the next older page.
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyHome})
	m.loading = false
	m, cmd = m.Update(tea.KeyMsg{Type: tea.KeyUp})
	m = load(t, m, cmd)
	if got := len(m.Entries()); got != 250 || m.more {
		t.Fatalf("%d entries (more %v), want all 250 and no more", got, m.more)
	}
	// A reload reads as many as are loaded, never the whole history.
	m = load(t, m, m.Reload())
	if want := "before=0 limit=250"; h.calls[len(h.calls)-1] != want {
		t.Fatalf("reload read %q, want %q", h.calls[len(h.calls)-1], want)
	}
}

func TestStates(t *testing.T) {
	h := &history{}
	for i, st := range []engine.SentState{engine.SentPending, engine.SentPending, engine.SentPending, engine.SentAcknowledged, engine.SentAbandoned} {
		h.entries = append(h.entries, engine.HistoryEntry{Seq: int64(i + 1), Peer: bob, Direction: engine.DirectionOut, ID: wire.LogicalID{byte(i + 1)}, At: at,
			Body: []byte(fmt.Sprintf("out %d", i+1)), State: st})
	}
	h.entries = append(h.entries, engine.HistoryEntry{Seq: 6, Peer: bob, Direction: engine.DirectionIn, ID: wire.LogicalID{6}, At: at, Body: []byte("in \x1b[31mred")})
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(70, 10)
	m = load(t, m, m.SetPeer(bob))
	m, cmd := m.Update(engine.Event{Kind: engine.EventSent, Peer: bob, ID: wire.LogicalID{2}})
	m = load(t, m, cmd)
	m, cmd = m.Update(engine.Event{Kind: engine.EventNotSent, Peer: bob, ID: wire.LogicalID{3}})
	m = load(t, m, cmd)
	v := m.View()
	for _, want := range []string{"out 1", "pending", "out 2", "relay accepted", "out 3", "not sent", "out 4", "acknowledged", "out 5", "abandoned", "in [31mred", "delivered"} {
		if !strings.Contains(v, want) {
			t.Errorf("%q missing from:\n%s", want, v)
		}
	}
	if strings.Contains(v, "\x1b[31m") {
		t.Fatal("a control sequence from a body reached the screen")
	}
}

// TestIgnoresOtherPeers: a late read for a conversation no longer shown is
// dropped, and events about other peers do not read.
func TestIgnoresOtherPeers(t *testing.T) {
	h := newHistory(3)
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(60, 10)
	stale := m.SetPeer(bob)
	carol := engine.MustParseAddress("carol/1")
	m.SetPeer(carol)
	m, _ = m.Update(stale())
	if len(m.Entries()) != 0 {
		t.Fatal("bob's history shown in carol's conversation")
	}
	m.loading = false
	if _, cmd := m.Update(engine.Event{Kind: engine.EventSent, Peer: bob}); cmd != nil {
		t.Fatal("an event about another peer started a read")
	}
}
