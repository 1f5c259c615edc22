package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/wire"
)

// The seam: what a model wrapping the chat (the demo, package tui/demo)
// may read and do. The wrapper owns its own state and keys; it hands every
// message it does not handle to Update, and changes a pane only through
// these methods. Pane indexes are those AddPane returned; a method given an
// index out of range does nothing.

// PaneState is what a wrapper may read of a pane.
type PaneState struct {
	Self, Peer engine.Address // the profile, and the conversation chosen
	Open       bool           // a client is attached
	Closed     string         // why not, as the status bar says ("crashed"), or ""
	Active     bool           // the pane has the keyboard
	// IdentityChanged: the chosen peer's identity changed and is not
	// accepted yet; NewFingerprint is the new identity's fingerprint once
	// its safety number is shown ("" before: ctrl+t accepts only what was
	// shown).
	IdentityChanged bool
	NewFingerprint  string
	Inbound         int // messages pending a decision (the inbox's total)
	Outbound        int // messages pending an ACK (the outbox's total)
	Shown           int // entries the conversation in view shows
	// Waiting are the received messages the conversation in view shows
	// waiting for a decision, oldest first.
	Waiting []wire.LogicalID
	// Group is the name of the group the composer writes to ("" when it
	// writes to Peer); Groups are the names of the groups listed.
	Group  string
	Groups []string
}

// Panes is the number of panes.
func (m Model) Panes() int { return len(m.panes) }

// FullHelp reports whether the full help is shown (f1): a wrapper that
// keeps its own lines short on a small screen shows them whole then.
func (m Model) FullHelp() bool { return m.full }

// Active is the index of the pane with the keyboard.
func (m Model) Active() int { return m.active }

// Pane reads pane i.
func (m Model) Pane(i int) PaneState {
	if i < 0 || i >= len(m.panes) {
		return PaneState{}
	}
	p := &m.panes[i]
	st := PaneState{Self: p.self, Peer: p.peer, Open: p.att != nil, Closed: p.closed, Active: p.active,
		Inbound: p.in().Total(), Outbound: p.out().Total(), Shown: len(p.tl().Entries())}
	if _, ch, ok := p.changedHere(); ok {
		st.IdentityChanged = true
		st.NewFingerprint = ch.fingerprint
	}
	if p.group != nil {
		st.Group = p.comp().GroupName()
	} else {
		for _, w := range p.tl().Waiting() {
			st.Waiting = append(st.Waiting, w.ID)
		}
	}
	for _, g := range p.conv().GroupItems() {
		st.Groups = append(st.Groups, g.Name)
	}
	return st
}

// ChoosePeer chooses peer in pane i's conversations and addresses the
// composer to it (with that conversation's draft) at once, where choosing
// it with the keys does so when the choice comes back: keys a wrapper
// types through Update right after go to that conversation.
func (m *Model) ChoosePeer(i int, peer engine.Address) tea.Cmd {
	if i < 0 || i >= len(m.panes) || peer.IsZero() {
		return nil
	}
	return m.chosen(i, m.panes[i].conv().Select(peer))
}

// ChooseGroup is ChoosePeer for the group named name, as ↓ past the peers
// reaches it; false when pane i lists no such group (yet: the list is read
// after each change).
func (m *Model) ChooseGroup(i int, name string) (tea.Cmd, bool) {
	if i < 0 || i >= len(m.panes) {
		return nil, false
	}
	sel := m.panes[i].conv().SelectGroup(name)
	if sel == nil {
		return nil, false
	}
	return m.chosen(i, sel), true
}

// chosen applies the choice the conversations' command reports (a
// conversations.SelectedMsg, made without I/O) to pane i now.
func (m *Model) chosen(i int, sel tea.Cmd) tea.Cmd {
	if sel == nil {
		return nil
	}
	q := &m.panes[i]
	next, cmd := q.Update(sel())
	*q = next
	return tag(i, q.gen, cmd)
}

// Quit applies the quit key to k: handled reports that k was the quit key
// (the caller passes nothing on), quit that the program ends now (no draft
// would be lost, or it was the second press). Any other key dismisses the
// question a first press asked, so a wrapper calls Quit on every key
// before handling it itself.
//
// Messages entered but not yet answered by the engine (the send in flight
// and those queued behind it) are never dropped by one press: the first
// press waits for them (Update quits once they are stored, or asks about a
// draft), and says how many are unsent; a second press quits at once.
func (m *Model) Quit(k tea.KeyMsg) (handled, quit bool) {
	if input.Matches(k, m.keys.Quit) {
		if m.quitAsk || m.quitWait {
			if m.quitWait && m.keepsDrafts() {
				for i := range m.panes {
					m.panes[i].keepQueued()
				}
			}
			return true, true
		}
		if m.unsent() > 0 {
			m.quitWait = true
			return true, false
		}
		if m.draft() == "" || m.keepsDrafts() && !m.groupText() {
			return true, true
		}
		m.quitAsk = true
		return true, false
	}
	m.quitAsk, m.quitWait = false, false
	return false, false
}

// Draft returns the text in pane i's composer.
func (m Model) Draft(i int) string {
	if i < 0 || i >= len(m.panes) {
		return ""
	}
	return m.panes[i].comp().Value()
}

// SetDraft replaces the text in pane i's composer: a wrapper that types a
// message of its own sets the person's draft aside first and brings it
// back after, so that its message is sent alone and the draft is kept.
func (m *Model) SetDraft(i int, text string) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].comp().SetValue(text)
	}
}

// Focus gives pane i the keyboard, as the key that switches profiles
// does; keys then typed through Update go to it.
func (m *Model) Focus(i int) tea.Cmd {
	if i < 0 || i >= len(m.panes) || i == m.active {
		return nil
	}
	m.panes[m.active].setActive(false)
	m.active = i
	q := &m.panes[i]
	return tag(i, q.gen, q.setActive(true))
}

// Note adds e to pane i's event log.
func (m *Model) Note(i int, e eventlog.Entry) { m.note(i, e) }

// NoteErr logs a failure in pane i's event log, named as the engine names
// err, with text saying what failed.
func (m *Model) NoteErr(i int, err error, text string) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].noteErr(engine.ErrorName(err), err, text)
	}
}

// SetFlags sets the switches pane i's status bar shows as on (the demo's
// "held", "drop:envelope"...), in order; nil shows none.
func (m *Model) SetFlags(i int, flags []string) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].flags = flags
	}
}

// HoldPresented keeps pane i from marking what it draws presented while
// hold is set: the demo arms a crash after the next transition, which must
// find its event neither drawn nor marked. Attach and Detach clear it.
func (m *Model) HoldPresented(i int, hold bool) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].holdPresented = hold
	}
}

// Events is the hook before events are drawn: when msg carries a run of
// engine events for a pane's current client, it returns that pane's index.
// A wrapper that must act before they are drawn (the demo's crash) checks
// each message with it and, to drop them, detaches the pane instead of
// passing the message on.
func (m Model) Events(msg tea.Msg) (int, bool) {
	pm, ok := msg.(paneMsg)
	if !ok || pm.pane >= len(m.panes) || pm.gen != m.panes[pm.pane].gen {
		return 0, false
	}
	_, ok = pm.msg.(eventsMsg)
	return pm.pane, ok
}

// Detach marks pane i closed for the reason why ("crashed",
// "reinstalling"): what its old client's commands return is dropped from
// now on.
func (m *Model) Detach(i int, why string) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].detach(why)
	}
}

// SetClosed changes what pane i's status bar says it is (a closed pane
// being reopened: "reopening"); it attaches and detaches nothing.
func (m *Model) SetClosed(i int, why string) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].closed = why
	}
}

// Attach gives pane i an open client again (a reopen, a reinstall): every
// list is read again and its events are listened to. newIdentity says the
// profile is a new install: the identity changes the pane knew of its
// peers are forgotten.
func (m *Model) Attach(i int, a *Attachment, newIdentity bool) tea.Cmd {
	if i < 0 || i >= len(m.panes) {
		return nil
	}
	p := &m.panes[i]
	cmd := p.attach(a)
	if newIdentity {
		p.changed = map[engine.Address]*identityChange{}
		p.updateBlocked()
	}
	cmds := []tea.Cmd{tag(i, p.gen, cmd)}
	if p.active {
		cmds = append(cmds, tag(i, p.gen, p.setFocus(p.focus)))
	}
	return tea.Batch(cmds...)
}

// SetPolicy shows policy in pane i's status bar at once (a wrapper changed
// the client's policy; the next tick reads it from the client anyway).
func (m *Model) SetPolicy(i int, policy engine.Policy) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].policy = policy
	}
}

// ReadState reads pane i's relay connection and policy again for its
// status bar (a wrapper unplugged or plugged the link).
func (m *Model) ReadState(i int) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].readState()
	}
}

// SetPrefixKey shows b among the global keys in the help: a key the
// wrapper handles before the chat sees it (the demo's ctrl+x).
func (m *Model) SetPrefixKey(b key.Binding) { m.keys.Prefix = b }

// SetHelpKeys replaces the help line with head followed by keys (the
// demo's controls, after ctrl+x); nil keys give the chat's help back. The
// command lays the panes out again for the help's new height.
func (m *Model) SetHelpKeys(head string, keys []key.Binding) tea.Cmd {
	m.helpHead, m.helpKeys = head, keys
	return m.resize()
}
