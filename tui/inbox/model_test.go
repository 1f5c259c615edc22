package inbox

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

var bob = engine.MustParseAddress("bob/1")

// pending is a fake list of pending received messages.
type pending struct {
	msgs    []engine.InboundMessage
	queries []engine.PageQuery
	batches [][]engine.FinalizeRequest
}

func newPending(n int) *pending {
	p := &pending{}
	for i := 1; i <= n; i++ {
		p.msgs = append(p.msgs, engine.InboundMessage{Seq: int64(i), Sender: bob, ID: wire.LogicalID{byte(i), byte(i >> 8)}, Body: []byte(fmt.Sprintf("msg %d", i))})
	}
	return p
}

func (p *pending) PendingInbound(_ context.Context, q engine.PageQuery) ([]engine.InboundMessage, error) {
	p.queries = append(p.queries, q)
	var out []engine.InboundMessage
	for _, m := range p.msgs {
		if m.Seq > q.After && len(out) < q.Limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (p *pending) CountInbound(context.Context, *engine.Address) (int, error) {
	return len(p.msgs), nil
}

func (p *pending) FinalizeBatch(_ context.Context, reqs []engine.FinalizeRequest) ([]engine.FinalizeResult, error) {
	p.batches = append(p.batches, reqs)
	res := make([]engine.FinalizeResult, len(reqs))
	for i, r := range reqs {
		found := false
		for j, m := range p.msgs {
			if m.ID == r.ID {
				p.msgs = append(p.msgs[:j], p.msgs[j+1:]...)
				found = true
				break
			}
		}
		if !found {
			res[i].Err = engine.ErrNotPending
			continue
		}
		res[i].AckSent = i%2 == 0
	}
	return res, nil
}

func press(s string) tea.KeyMsg {
	switch s {
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// step delivers cmd's message (and the reads it leads to) to the model.
func step(m Model, cmd tea.Cmd) Model {
	for cmd != nil {
		m, cmd = m.Update(cmd())
	}
	return m
}

func newInbox(p *pending, h int) Model {
	m := New(context.Background(), p, themes.MustGet("dark"))
	m = step(m, m.SetSize(60, h))
	m.Focus()
	return step(m, m.Reload())
}

func TestPaging(t *testing.T) {
	p := newPending(10)
	m := newInbox(p, 6) // four rows per page
	if got := len(m.Page()); got != 4 || m.Total() != 10 {
		t.Fatalf("page of %d of %d, want 4 of 10", got, m.Total())
	}
	if v := m.View(); !strings.Contains(v, "10 pending received · page 1/3") {
		t.Fatalf("title:\n%s", v)
	}
	m = step(m.Update(press("pgdown")))
	if got := p.queries[len(p.queries)-1]; got.After != 4 || got.Limit != 4 {
		t.Fatalf("next page read %+v, want after 4, limit 4", got)
	}
	m = step(m.Update(press("pgdown")))
	if got := len(m.Page()); got != 2 || m.Page()[0].Seq != 9 {
		t.Fatalf("last page %d from %d, want 2 from 9", got, m.Page()[0].Seq)
	}
	m = step(m.Update(press("pgup")))
	if m.Page()[0].Seq != 5 {
		t.Fatalf("previous page starts at %d, want 5", m.Page()[0].Seq)
	}
}

func TestCommitOne(t *testing.T) {
	p := newPending(3)
	m := newInbox(p, 8)
	m = step(m.Update(press("down")))
	m = step(m.Update(press("c")))
	if len(p.batches) != 1 || len(p.batches[0]) != 1 || p.batches[0][0].ID != (wire.LogicalID{2}) || p.batches[0][0].Outcome != engine.OutcomeCommitted {
		t.Fatalf("commit finalized %+v, want message 2 committed", p.batches)
	}
	if m.Total() != 2 || !strings.Contains(m.View(), "committed 1, 1 ACK sent") {
		t.Fatalf("after commit: total %d\n%s", m.Total(), m.View())
	}
	step(m.Update(press("d")))
	if got := p.batches[1][0]; got.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("d finalized as %v, want discarded", got.Outcome)
	}
}

// TestCommitAll commits in batches of BatchSize through FinalizeBatch, and
// says how many ACKs went out.
func TestCommitAll(t *testing.T) {
	p := newPending(BatchSize + 10)
	m := newInbox(p, 8)
	m = step(m.Update(press("C")))
	if len(p.msgs) != 0 || len(p.batches) != 2 || len(p.batches[0]) != BatchSize || len(p.batches[1]) != 10 {
		t.Fatalf("left %d, batches of %d and %d; want all in batches of %d and 10", len(p.msgs), len(p.batches[0]), len(p.batches[1]), BatchSize)
	}
	if v := m.View(); !strings.Contains(v, fmt.Sprintf("committed %d, %d ACK sent", BatchSize+10, BatchSize/2+5)) {
		t.Fatalf("summary:\n%s", v)
	}
}

func TestDiscardAllAsks(t *testing.T) {
	p := newPending(3)
	m := newInbox(p, 8)
	m = step(m.Update(press("D")))
	if len(p.batches) != 0 || !strings.Contains(m.View(), "discard all 3 pending received? y/n") {
		t.Fatalf("D did not ask first:\n%s", m.View())
	}
	m = step(m.Update(press("n")))
	if len(p.batches) != 0 || strings.Contains(m.View(), "y/n") {
		t.Fatal("n did not cancel")
	}
	m = step(m.Update(press("D")))
	step(m.Update(press("y")))
	if len(p.msgs) != 0 || p.batches[0][0].Outcome != engine.OutcomeDiscarded {
		t.Fatalf("discard all left %d", len(p.msgs))
	}
}

// TestEventsReload: a delivery, a finalization or a resync reads the page
// again; other events do not.
func TestEventsReload(t *testing.T) {
	m := newInbox(newPending(1), 8)
	for _, tc := range []struct {
		kind   engine.EventKind
		reload bool
	}{{engine.EventReceived, true}, {engine.EventFinalized, true}, {engine.EventResync, true}, {engine.EventSent, false}, {engine.EventAbandoned, false}} {
		m2, cmd := m.Update(engine.Event{Kind: tc.kind})
		if (cmd != nil) != tc.reload {
			t.Errorf("event %d: reload %v, want %v", tc.kind, cmd != nil, tc.reload)
		}
		_ = m2
	}
}

// TestReadBeforeSized: a page read before the panel had its size holds one
// row; the size reads it again.
func TestReadBeforeSized(t *testing.T) {
	p := newPending(7)
	m := New(context.Background(), p, themes.MustGet("dark"))
	m = step(m, m.Reload())
	if len(m.Page()) != 1 {
		t.Fatalf("before a size: %d shown", len(m.Page()))
	}
	m = step(m, m.SetSize(60, 12))
	if len(m.Page()) != 7 {
		t.Fatalf("after a size: %d shown of %d, want 7", len(m.Page()), m.Total())
	}
}
