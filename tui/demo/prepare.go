// Setting a scenario's stage (play.go says what it is).

package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// resetStage sets, at once, the switches a scenario relies on: delivery
// released and links plugged in, no loss or crash armed, commits by hand
// without automatic retry; a crashed profile is reopened. What it changed
// is noted in that profile's events.
func (m *Model) resetStage() tea.Cmd {
	w := m.world
	var cmds []tea.Cmd
	for i := range m.chat.Panes() {
		p := m.chat.Pane(i)
		self := p.Self
		var did []string
		if f := w.flags(self); f.held || f.unplugged {
			off := false
			w.setSwitches(self, &off, &off)
			m.chat.ReadState(i)
			did = append(did, "delivery released and the link plugged in")
		}
		if d := w.device(self); d != nil {
			w.mu.Lock()
			faults := d.faults
			w.mu.Unlock()
			if faults != nil && faults.disarm() {
				did = append(did, "the armed losses forgotten")
			}
		}
		if m.crashArmed[i] {
			m.armCrash(i, false)
			did = append(did, "the armed crash forgotten")
		}
		if pol := w.policyOf(self); pol.Commit != engine.CommitManual || pol.AutoRetry {
			pol = w.setPolicy(self, func(pol *engine.Policy) { pol.Commit, pol.AutoRetry = engine.CommitManual, false })
			m.chat.SetPolicy(i, pol)
			did = append(did, "commits by hand, no automatic retry")
		}
		if !p.Open && p.Closed != "reopening" && p.Closed != "reinstalling" {
			cmds = append(cmds, m.reopen(i))
			did = append(did, "reopened")
		}
		m.readFlags(i)
		if len(did) > 0 {
			m.chat.Note(i, eventlog.Entry{Name: "demo_stage", Level: eventlog.Demo,
				Text: fmt.Sprintf("scenario %d: %s: %s", m.scen.n, self, strings.Join(did, "; "))})
		}
	}
	return tea.Batch(cmds...)
}

// stageMsg is what the stage read from the stores.
type stageMsg struct {
	serial int
	before map[wire.LogicalID]bool
	idents map[engine.Address]engine.IdentityKey
	group  string
	notes  map[engine.Address][]string
	err    error
}

// readStage starts the stage's read once both profiles are open: each
// side's pinned identity is made the other's current one (a reinstall
// that no scenario saw through), and the messages that exist already are
// listed, so that the steps' checks tell the run's own apart.
func (m *Model) readStage() tea.Cmd {
	r := m.scen
	if r == nil || !r.staging || r.reading || r.failed != "" || m.forgetting > 0 {
		return nil
	}
	for i := range m.chat.Panes() {
		if !m.chat.Pane(i).Open {
			return nil // a reopen is on its way
		}
	}
	r.reading = true
	w, serial, group, pinned := m.world, r.serial, r.s.group, r.s.pinned
	a, b := m.chat.Pane(0).Self, m.chat.Pane(1).Self
	return func() tea.Msg {
		msg := stageMsg{serial: serial, before: map[wire.LogicalID]bool{}, idents: map[engine.Address]engine.IdentityKey{},
			notes: map[engine.Address][]string{}}
		ca, cb := w.client(a), w.client(b)
		if ca == nil || cb == nil {
			msg.err = fmt.Errorf("%s or %s is closed", a, b)
			return msg
		}
		for _, pair := range [][2]*engine.Client{{ca, cb}, {cb, ca}} {
			c, peer := pair[0], pair[1]
			msg.idents[c.Self()] = c.Identity()
			pin, err := pinOf(w.ctx, c, peer)
			if err != nil {
				msg.err = err
				return msg
			}
			var why string
			switch {
			case pin == pinStale:
				why = "accepted " + peer.Self().String() + "'s new identity (a reinstall no scenario saw through)"
			case pin == pinNone && pinned:
				why = "pinned " + peer.Self().String() + "'s identity from the relay, as a first message would (an identity changes only once pinned)"
			}
			if why != "" {
				if _, err := c.AcceptIdentity(w.ctx, peer.Self(), peer.Identity().Fingerprint()); err != nil {
					msg.err = err
					return msg
				}
				msg.notes[c.Self()] = append(msg.notes[c.Self()], why)
			}
			h, err := c.History(w.ctx, peer.Self(), 0, verdictScan)
			if err != nil {
				msg.err = err
				return msg
			}
			for _, e := range h {
				msg.before[e.ID] = true
			}
		}
		if group != "" {
			gs, err := ca.Groups(w.ctx)
			if err != nil {
				msg.err = err
				return msg
			}
			taken := map[string]bool{}
			for _, g := range gs {
				taken[g.Name] = true
			}
			msg.group = group
			for n := 2; taken[msg.group]; n++ {
				msg.group = fmt.Sprintf("%s-%d", group, n)
			}
		}
		return msg
	}
}

// staged takes the stage's read: the run is ready for its first step.
func (m *Model) staged(msg stageMsg) tea.Cmd {
	r := m.scen
	if r == nil || r.serial != msg.serial || !r.staging {
		return nil
	}
	r.reading = false
	for i := range m.chat.Panes() {
		p := m.chat.Pane(i)
		for _, t := range msg.notes[p.Self] {
			m.chat.Note(i, eventlog.Entry{Name: "demo_stage", Level: eventlog.Demo, Text: fmt.Sprintf("scenario %d: %s %s", r.n, p.Self, t)})
		}
	}
	if msg.err != nil {
		r.fail(0, msg.err)
		return nil
	}
	r.staging = false
	r.before, r.idents, r.group = msg.before, msg.idents, msg.group
	// Each profile shows its conversation with the other: a step's keys
	// act on what their pane shows.
	a, b := m.chat.Pane(0).Self, m.chat.Pane(1).Self
	return tea.Batch(m.chat.ChoosePeer(0, b), m.chat.ChoosePeer(1, a), m.playQueued())
}

// pin is what a device has pinned of a peer's identity.
type pin int

const (
	pinNone    pin = iota // nothing yet
	pinCurrent            // the peer's identity now
	pinStale              // another: the peer was reinstalled since
)

// pinOf says what c has pinned of peer's identity: the safety number c
// computes with its pin is the one of peer's identity now only when the pin
// is that identity.
func pinOf(ctx context.Context, c, peer *engine.Client) (pin, error) {
	n, err := c.SafetyNumber(ctx, peer.Self())
	switch {
	case errors.Is(err, engine.ErrNoIdentityPinned):
		return pinNone, nil
	case err != nil:
		return pinNone, err
	case n == engine.SafetyNumber(c.Self(), c.Identity(), peer.Self(), peer.Identity()):
		return pinCurrent, nil
	}
	return pinStale, nil
}
