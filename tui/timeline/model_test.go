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
	entries   []engine.HistoryEntry
	waiting   []engine.InboundMessage
	finalized []engine.FinalizeRequest
	calls     []string
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

func (h *history) PendingInbound(context.Context, engine.PageQuery) ([]engine.InboundMessage, error) {
	return h.waiting, nil
}

func (h *history) FinalizeBatch(_ context.Context, reqs []engine.FinalizeRequest) ([]engine.FinalizeResult, error) {
	h.finalized = append(h.finalized, reqs...)
	out := make([]engine.FinalizeResult, len(reqs))
	for i, r := range reqs {
		for j, w := range h.waiting {
			if w.ID == r.ID {
				h.waiting = append(h.waiting[:j:j], h.waiting[j+1:]...)
				if r.Outcome == engine.OutcomeCommitted {
					h.entries = append(h.entries, engine.HistoryEntry{Seq: int64(len(h.entries) + 1), Peer: w.Sender, Direction: engine.DirectionIn, ID: w.ID, At: w.ReceivedAt, Body: w.Body})
				}
				break
			}
		}
		out[i].AckSent = true
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

// steps delivers cmd's message, and those it leads to, to the model.
func steps(m Model, cmd tea.Cmd) Model {
	for cmd != nil {
		m, cmd = m.Update(cmd())
	}
	return m
}

func press(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// TestWaitingInTheConversation: a received message not committed yet shows
// where it arrived, between what came before and after it; c commits the
// oldest waiting one, x asks once and then discards.
func TestWaitingInTheConversation(t *testing.T) {
	h := newHistory(2) // message 1 out, message 2 in, both at 12:00
	h.entries[1].At = at.Add(2 * time.Minute)
	h.waiting = []engine.InboundMessage{
		{Seq: 1, Sender: bob, ID: wire.LogicalID{0xa1}, ReceivedAt: at.Add(time.Minute), Body: []byte("arrived between")},
		{Seq: 2, Sender: bob, ID: wire.LogicalID{0xa2}, ReceivedAt: at.Add(3 * time.Minute), Body: []byte("arrived last")},
	}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(80, 10)
	m.Focus()
	m = load(t, m, m.SetPeer(bob))
	v := m.View()
	order := []string{"message 1", "arrived between", "message 2", "arrived last"}
	last := -1
	for _, s := range order {
		i := strings.Index(v, s)
		if i <= last {
			t.Fatalf("%q out of order in:\n%s", s, v)
		}
		last = i
	}
	if !strings.Contains(v, "waiting · c commit · x discard") || !strings.Contains(v, "2 waiting") {
		t.Fatalf("the oldest waiting message does not say its keys:\n%s", v)
	}
	m = steps(m.Update(press("c")))
	if len(h.finalized) != 1 || h.finalized[0].ID != (wire.LogicalID{0xa1}) || h.finalized[0].Outcome != engine.OutcomeCommitted {
		t.Fatalf("c finalized %+v, want the oldest waiting one committed", h.finalized)
	}
	m = steps(m.Update(press("x")))
	if len(h.finalized) != 1 || !strings.Contains(m.View(), "y discards it") {
		t.Fatalf("x discarded without asking:\n%s", m.View())
	}
	m = steps(m.Update(press("y")))
	if len(h.finalized) != 2 || h.finalized[1].ID != (wire.LogicalID{0xa2}) || h.finalized[1].Outcome != engine.OutcomeDiscarded {
		t.Fatalf("x y finalized %+v, want the waiting one discarded", h.finalized)
	}
	if v := m.View(); strings.Contains(v, "waiting") || !strings.Contains(v, "arrived between") || strings.Contains(v, "arrived last") {
		t.Fatalf("after a commit and a discard:\n%s", v)
	}
}

// TestCommitShownOnRead: under the on-read policy, what the panel shows is
// committed, once; what is scrolled out of view is not.
func TestCommitShownOnRead(t *testing.T) {
	h := newHistory(40)
	for i := range h.entries {
		h.entries[i].At = at.Add(time.Duration(i) * time.Minute)
	}
	h.waiting = []engine.InboundMessage{
		{Seq: 1, Sender: bob, ID: wire.LogicalID{0xb1}, ReceivedAt: at.Add(-time.Hour), Body: []byte("long ago, out of view")},
		{Seq: 2, Sender: bob, ID: wire.LogicalID{0xb2}, ReceivedAt: at.Add(time.Hour), Body: []byte("just now")},
	}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(80, 8)
	m.SetCommitOnRead(true)
	m = load(t, m, m.SetPeer(bob))
	if strings.Contains(m.View(), "c commit") {
		t.Fatal("under on-read the conversation offers c")
	}
	cmd := m.CommitShown()
	if m.CommitShown() != nil {
		t.Fatal("a second look committed again while the first was in flight")
	}
	m = steps(m, cmd)
	if len(h.finalized) != 1 || h.finalized[0].ID != (wire.LogicalID{0xb2}) {
		t.Fatalf("committed %+v, want only the message in view", h.finalized)
	}
}

// TestSearch: / finds what the loaded conversation holds, newest match
// first; n walks to older matches, N back, esc clears.
func TestSearch(t *testing.T) {
	h := newHistory(30)
	h.entries[4].Body = []byte("the Needle, early")
	h.entries[19].Body = []byte("a needle again")
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(80, 8)
	m.Focus()
	m = load(t, m, m.SetPeer(bob))
	m, _ = m.Update(press("/"))
	if !m.Capturing() {
		t.Fatal("/ does not open the search prompt")
	}
	m, _ = m.Update(press("needle"))
	m, _ = m.Update(press("enter"))
	if v := m.View(); !strings.Contains(v, "match 1 of 2") || !strings.Contains(v, "a needle again") {
		t.Fatalf("after the search:\n%s", v)
	}
	m, _ = m.Update(press("n"))
	if v := m.View(); !strings.Contains(v, "match 2 of 2") || !strings.Contains(v, "the Needle, early") {
		t.Fatalf("n did not move to the older match:\n%s", v)
	}
	m, _ = m.Update(press("N"))
	if v := m.View(); !strings.Contains(v, "match 1 of 2") {
		t.Fatalf("N did not move back:\n%s", v)
	}
	m, _ = m.Update(press("esc"))
	if v := m.View(); strings.Contains(v, "match") {
		t.Fatalf("esc did not clear the search:\n%s", v)
	}
}
