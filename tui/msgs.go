package tui

import (
	"github.com/parley-chat/parley/wire"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
)

// paneMsg carries a message back to the pane whose command produced it;
// gen is the pane's session generation at the time, so that results from a
// client closed since (a crash, a reinstall) are dropped.
type paneMsg struct {
	pane, gen int
	msg       tea.Msg
}

// tag routes what cmd produces to pane at generation gen. Batches are
// unpacked so that the runtime still runs their commands.
func tag(pane, gen int, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		msg := cmd()
		switch msg := msg.(type) {
		case nil:
			return nil
		case tea.BatchMsg:
			out := make(tea.BatchMsg, 0, len(msg))
			for _, c := range msg {
				if c != nil {
					out = append(out, tag(pane, gen, c))
				}
			}
			return out
		}
		return paneMsg{pane: pane, gen: gen, msg: msg}
	}
}

// eventsMsg is a run of engine events read from a client's channel, with
// the notes that were waiting when the first was read (they came first).
type eventsMsg struct {
	notes  []eventlog.Entry
	events []engine.Event
}

// noteMsg is something the pump or the demo wants in the event log.
type noteMsg struct{ entry eventlog.Entry }

// clientEndedMsg says the listener stopped: the client was closed.
type clientEndedMsg struct{}

// traceMsg carries a message's trace, drawn (tracetext.Draw).
type traceMsg struct {
	id   wire.LogicalID
	envs []wire.EnvelopeID // the envelopes that carried it, as far as known
	text string
	err  error
}

// namesMsg carries the names given to devices.
type namesMsg struct {
	names map[engine.Address]string
	err   error
}

// namedMsg reports a name set or forgotten.
type namedMsg struct {
	peer engine.Address
	err  error
}

// safetyMsg carries the safety number with the chosen peer.
type safetyMsg struct {
	peer   engine.Address
	number string
	basis  engine.SafetyBasis
	err    error
}

// newIdentityMsg carries what the relay's bundle says of a peer whose
// identity changed: the safety number it would have.
type newIdentityMsg struct {
	peer        engine.Address
	number      string
	fingerprint string
	err         error
}

// acceptedMsg reports an accepted identity change.
type acceptedMsg struct {
	peer engine.Address
	err  error
}

// presentedMsg reports a MarkPresented.
type presentedMsg struct{ err error }

// TickMsg drives presentation marking and the on-read commits, four times
// a second; a wrapper (the demo) does its own periodic work on it too.
type TickMsg time.Time

const tickInterval = 250 * time.Millisecond

func tick() tea.Cmd {
	return tea.Tick(tickInterval, func(t time.Time) tea.Msg { return TickMsg(t) })
}
