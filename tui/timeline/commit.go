// Deciding from the conversation: c and x on the oldest message waiting,
// and the on-read commits of what the view shows.

package timeline

import (
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// firstWaiting is the oldest received message still pending that no
// decision is in flight for: the one c and x act on.
func (m Model) firstWaiting() (engine.InboundMessage, bool) {
	for _, w := range m.waiting {
		if !m.busy[w.ID] {
			return w, true
		}
	}
	return engine.InboundMessage{}, false
}

// finalize commits or discards ws.
func (m *Model) finalize(ws []engine.InboundMessage, outcome engine.Outcome, auto bool) tea.Cmd {
	reqs := make([]engine.FinalizeRequest, 0, len(ws))
	for _, w := range ws {
		if m.busy[w.ID] {
			continue
		}
		m.busy[w.ID] = true
		reqs = append(reqs, engine.FinalizeRequest{Sender: w.Sender, ID: w.ID, Outcome: outcome})
	}
	if len(reqs) == 0 {
		return nil
	}
	src, ctx, peer := m.src, m.ctx, m.peer
	return func() tea.Msg {
		res, err := src.FinalizeBatch(ctx, reqs)
		return FinalizedMsg{Peer: peer, Outcome: outcome, Auto: auto, Reqs: reqs, Results: res, Err: err}
	}
}

func (m Model) finalized(msg FinalizedMsg) (Model, tea.Cmd) {
	for _, r := range msg.Reqs {
		delete(m.busy, r.ID)
	}
	if msg.Peer != m.peer {
		return m, nil
	}
	return m, m.Reload()
}

// CommitShown commits, under the on-read policy, the received messages
// still pending that the panel shows now; it does nothing otherwise.
func (m *Model) CommitShown() tea.Cmd {
	if !m.onRead || len(m.waiting) == 0 || m.h <= 1 {
		return nil
	}
	top, bottom := m.vp.YOffset, m.vp.YOffset+m.vp.Height-1
	var shown []engine.InboundMessage
	for i, it := range m.items {
		if it.wait == nil || i >= len(m.spans) || it.wait.Content == wire.ContentFile {
			continue // a file is committed by its fetch, never on read
		}
		if sp := m.spans[i]; sp[1] >= top && sp[0] <= bottom {
			shown = append(shown, *it.wait)
		}
	}
	return m.finalize(shown, engine.OutcomeCommitted, true)
}
