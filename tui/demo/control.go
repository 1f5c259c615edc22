package demo

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/input"
)

// demoKey runs the demo control named by the key that followed ctrl+x.
func (m *Model) demoKey(k tea.KeyMsg) tea.Cmd {
	w, i := m.world, m.chat.Active()
	p := m.chat.Pane(i)
	self := p.Self
	peer := p.Peer
	if peer.IsZero() || peer == self {
		peer = m.chat.Pane((i + 1) % m.chat.Panes()).Self
	}
	say := func(text string) {
		m.chat.Note(i, eventlog.Entry{Name: "demo", Text: text, Level: eventlog.Demo})
	}
	switch {
	case input.Matches(k, m.keys.Cancel):
		return nil
	case input.Matches(k, m.keys.Hold):
		held := !w.flags(self).held
		w.setSwitches(self, &held, nil)
		m.readFlags(i)
		if held {
			say("holding delivery to " + self.String() + ": envelopes wait at the relay (ctrl+x h releases)")
		} else {
			say("released delivery to " + self.String())
		}
	case input.Matches(k, m.keys.HoldBoth):
		hold := false
		for j := range m.chat.Panes() {
			if !w.flags(m.chat.Pane(j).Self).held {
				hold = true
			}
		}
		for j := range m.chat.Panes() {
			them := m.chat.Pane(j).Self
			w.setSwitches(them, &hold, nil)
			m.readFlags(j)
			if hold {
				m.chat.Note(j, eventlog.Entry{Name: "demo", Level: eventlog.Demo, Text: "holding delivery to " + them.String() + ": send on both sides, then ctrl+x H releases (a collision)"})
			} else {
				m.chat.Note(j, eventlog.Entry{Name: "demo", Level: eventlog.Demo, Text: "released delivery to " + them.String()})
			}
		}
		if hold && m.forgetting == 0 {
			return w.collisionCheck(i, self, peer)
		}
	case input.Matches(k, m.keys.Forget):
		say("forgetting the sessions between " + self.String() + " and " + peer.String() + " on both sides (identities stay pinned)")
		m.forgetting++
		return w.forgetCmd(i, self, peer)
	case input.Matches(k, m.keys.Drop), input.Matches(k, m.keys.DropAck):
		ack := input.Matches(k, m.keys.DropAck)
		d := w.device(self)
		w.mu.Lock()
		faults := d.faults
		w.mu.Unlock()
		if faults == nil {
			say(self.String() + " is closed")
			return nil
		}
		faults.arm(peer, ack)
		m.readFlags(i)
		if ack {
			say(fmt.Sprintf("the next ACK %s → %s will be lost after the relay accepts it (commit something from %s)", self, peer, peer))
		} else {
			say(fmt.Sprintf("the next envelope %s → %s will be lost after the relay accepts it", self, peer))
		}
	case input.Matches(k, m.keys.Unplug):
		un := !w.flags(self).unplugged
		w.setSwitches(self, nil, &un)
		m.readFlags(i)
		m.chat.ReadState(i)
		if un {
			say(self.String() + "'s relay link unplugged: sends stay pending and show not sent")
		} else {
			say(self.String() + "'s relay link plugged in again: ctrl+r retries")
		}
	case input.Matches(k, m.keys.AutoCommit):
		pol := w.setPolicy(self, func(pol *engine.Policy) {
			if pol.Commit == engine.CommitOnArrival {
				pol.Commit = engine.CommitManual
			} else {
				pol.Commit = engine.CommitOnArrival
			}
		})
		m.chat.SetPolicy(i, pol)
		say(fmt.Sprintf("auto-commit %s for %s (the engine commits every delivery as it arrives)", onOff(pol.Commit == engine.CommitOnArrival), self))
	case input.Matches(k, m.keys.AutoRetry):
		pol := w.setPolicy(self, func(pol *engine.Policy) { pol.AutoRetry = !pol.AutoRetry })
		m.chat.SetPolicy(i, pol)
		say(fmt.Sprintf("auto-retry %s for %s (backoff %s doubling to %s, at once after a reconnection or a convergence)", onOff(pol.AutoRetry), self, pol.RetryMin, pol.RetryMax))
	case input.Matches(k, m.keys.Crash):
		if !p.Open {
			return m.reopen(i)
		}
		m.detach(i, "crashed")
		return w.crashCmd(i, self, "now")
	case input.Matches(k, m.keys.CrashNext):
		if !p.Open {
			say(self.String() + " is closed: ctrl+x o reopens it")
			return nil
		}
		m.armCrash(i, true)
		say(self.String() + " will crash right after its next transition commits, before it is shown")
	case input.Matches(k, m.keys.Reopen):
		if p.Open {
			say(self.String() + " is open")
			return nil
		}
		return m.reopen(i)
	case input.Matches(k, m.keys.Reinstall):
		m.detach(i, "reinstalling")
		say("reinstalling " + self.String() + ": a new identity for the same address")
		return func() tea.Msg {
			s, err := w.reinstall(w.ctx, self)
			msg := demoMsg{pane: i, attach: s, err: err, what: "reinstall"}
			if err == nil {
				msg.entries = []eventlog.Entry{{At: w.now(), Name: "demo_reinstall", Level: eventlog.Demo,
					Text: fmt.Sprintf("%s reinstalled with identity %s: its peers meet identity_changed", self, s.Client.Identity().Fingerprint())}}
			}
			return msg
		}
	case input.Matches(k, m.keys.Link):
		say("linking a laptop to " + self.User + "'s account from " + self.String() + ": the code, the six digits, the list's next generation")
		return m.linkCmd(i)
	case len(k.Runes) == 1 && k.Runes[0] >= '1' && int(k.Runes[0]-'0') <= len(scenarios()):
		return m.startScenario(int(k.Runes[0] - '0'))
	default:
		say(fmt.Sprintf("no demo control on %q (ctrl+x then h, H, d, a, k, K, o, i, s, c, r, u or l; a digit plays a guided scenario: %s)", k.String(), scenarioMenu()))
	}
	return nil
}

func (m *Model) reopen(i int) tea.Cmd {
	w, self := m.world, m.chat.Pane(i).Self
	m.chat.SetClosed(i, "reopening")
	return func() tea.Msg {
		s, err := w.open(w.ctx, self)
		msg := demoMsg{pane: i, attach: s, err: err, what: "reopen"}
		if err == nil {
			text := self.String() + " reopened"
			if s.Client.ResyncRequired() {
				text += ": resync follows (committed events were not shown before the crash)"
			} else {
				text += ": no resync needed (everything committed had been shown)"
			}
			msg.entries = []eventlog.Entry{{At: w.now(), Name: "demo_reopen", Level: eventlog.Demo, Text: text}}
		}
		return msg
	}
}

// demoResult applies what a demo control did to its pane.
func (m *Model) demoResult(msg demoMsg) tea.Cmd {
	i := msg.pane
	if i >= m.chat.Panes() {
		return nil
	}
	if msg.what == "forget" && m.forgetting > 0 {
		m.forgetting--
	}
	for _, e := range msg.entries {
		m.chat.Note(i, e)
	}
	if msg.err != nil {
		m.chat.NoteErr(i, msg.err, "demo "+msg.what)
		if msg.attach == nil && msg.what != "crash" {
			m.chat.SetClosed(i, "closed")
		}
	}
	if msg.attach == nil {
		return nil
	}
	cmd := m.chat.Attach(i, msg.attach, msg.what == "reinstall")
	m.crashArmed[i] = false // the chat's hold went with the attach
	m.readFlags(i)
	return cmd
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
