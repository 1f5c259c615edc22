package demo

import (
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
)

// A scenario is one of the hard cases, played by the demo one step per key
// press (space or enter) with a line of narration per step. A step is what
// a person would type, on one profile; the narration says what just
// happened, in the protocol's words.
type scenario struct {
	name  string
	steps []step
}

type step struct {
	on   int          // the pane the keys go to: 0 alice, 1 bob
	keys []tea.KeyMsg // typed as they are
	do   func(m *Model) tea.Cmd
	say  string
}

// scenarioRun is a scenario being played.
type scenarioRun struct {
	n    int // its number, from 1
	s    scenario
	next int // the step that space plays next
	// queued counts presses of space made while a profile was still being
	// reopened or reinstalled: each plays once it is back, so that no
	// step's keys go to a profile that is not there yet.
	queued int
}

// settling reports whether the next step must wait: a profile is being
// reopened or reinstalled, the sessions are being forgotten, or the step's
// profile is armed to crash and has not yet.
func (m Model) settling() bool {
	if m.forgetting > 0 {
		return true
	}
	for i := range m.chat.Panes() {
		if p := m.chat.Pane(i); !p.Open && (p.Closed == "reopening" || p.Closed == "reinstalling") {
			return true
		}
	}
	if r := m.scen; r != nil && r.next < len(r.s.steps) {
		if on := r.s.steps[r.next].on; on < len(m.crashArmed) && m.crashArmed[on] {
			return true
		}
	}
	return false
}

// nextStep plays the next step, or queues it while a profile is not back.
func (m *Model) nextStep() tea.Cmd {
	if m.scen == nil {
		return nil
	}
	if m.settling() {
		m.scen.queued++
		return nil
	}
	return m.stepScenario()
}

// playQueued plays the steps asked for while a profile was away.
func (m *Model) playQueued() tea.Cmd {
	var cmds []tea.Cmd
	for m.scen != nil && m.scen.queued > 0 && !m.settling() {
		m.scen.queued--
		cmds = append(cmds, m.stepScenario())
	}
	return tea.Batch(cmds...)
}

// Keys, as a person types them.
func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
func alt(r rune) tea.KeyMsg     { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: true} }
func ctrl(t tea.KeyType) tea.KeyMsg {
	return tea.KeyMsg{Type: t}
}
func demoCtl(r rune) []tea.KeyMsg { return []tea.KeyMsg{ctrl(tea.KeyCtrlX), runes(string(r))} }
func write(text string) []tea.KeyMsg {
	return []tea.KeyMsg{alt('3'), runes(text), ctrl(tea.KeyEnter)}
}
func keys(groups ...[]tea.KeyMsg) []tea.KeyMsg {
	var out []tea.KeyMsg
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// showInbox opens the inbox; the step's commit goes through the client
// (commitHere), so that it does not depend on the inbox's page having been
// read again after a reopen.
var showInbox = []tea.KeyMsg{alt('4')}

const verdictSay = "Done. The exactly-once line above compares both stores: each message is in the other's history once, or still pending, never lost or doubled."

// scenarios are the guided cases, in the order of their digits (a function:
// their steps refer to the model's key handling, which refers to them).
func scenarios() []scenario {
	return []scenario{
		{name: "collision", steps: []step{
			{on: 0, keys: keys(demoCtl('s'), demoCtl('H')), say: "Both sessions are forgotten and delivery to both is held: the next message each way starts a new session."},
			{on: 0, keys: write("hello from alice"), say: "alice wrote. Relay accepted is not delivered: the relay holds her PreKey message, bob has not seen it."},
			{on: 1, keys: write("hello from bob"), say: "bob wrote too, on a session of his own: two session initiations now cross at the relay."},
			{on: 0, keys: demoCtl('H'), say: "Released. Each side reads the other's initiation; the lower initiation ID wins, the winner drops the loser's message unread and announces its session (session_collision)."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, do: retryOther, say: "Both retry: the message that lost goes again with its logical ID, on the winning session; the other side dedups anything it already has."},
			{on: 0, keys: showInbox, do: commitBoth, say: "Both commit. Each ACK tells the sender that the peer's application finalized its message, and clears it."},
			{on: 0, say: verdictSay},
		}},
		{name: "lost envelope", steps: []step{
			{on: 0, keys: demoCtl('d'), say: "The next envelope alice sends to bob will be lost after the relay accepts it."},
			{on: 0, keys: write("this envelope gets lost"), say: "alice wrote: relay accepted, then lost. Relay accepted is not delivered: alice keeps the message pending until bob's ACK."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, say: "alice retries: the same logical ID in a fresh envelope. bob has it now, pending his decision."},
			{on: 1, keys: showInbox, do: commitHere, say: "bob commits: his ACK clears alice's pending message."},
			{on: 0, say: verdictSay},
		}},
		{name: "lost ACK", steps: []step{
			{on: 0, keys: write("acknowledge me"), say: "alice wrote; bob holds it pending."},
			{on: 1, keys: keys(demoCtl('a'), showInbox), do: commitHere, say: "bob commits, but his ACK is lost after the relay accepted it: alice still holds the message pending."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, say: "alice retries. bob knows the logical ID as committed (already_committed): no second copy, and a new ACK goes back and clears it."},
			{on: 0, say: verdictSay},
		}},
		{name: "crash between commit and event", steps: []step{
			{on: 1, keys: demoCtl('K'), say: "bob will crash right after his next transition commits, before it is shown or marked presented."},
			{on: 0, keys: write("are you still there?"), say: "alice wrote; bob stored it durably and crashed before showing it."},
			{on: 1, keys: demoCtl('o'), say: "bob reopens: his store is ahead of what he had shown (state_resync_required), every list is read again, and the message is pending, not lost."},
			{on: 1, keys: showInbox, do: commitHere, say: "bob commits; the ACK clears alice's message."},
			{on: 0, say: verdictSay},
		}},
		{name: "identity change", steps: []step{
			{on: 1, keys: demoCtl('i'), say: "bob is reinstalled: a new identity for the same address, registered again at the relay."},
			{on: 1, keys: write("it's me, reinstalled"), say: "bob writes with his new identity: alice refuses it (identity_changed), shows the new safety number and blocks sending to bob/1."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlT)}, say: "alice compares the safety number and accepts the new identity (ctrl+t)."},
			{on: 1, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, say: "bob retries: what alice refused goes again with its logical ID, to an identity she now trusts."},
			{on: 0, keys: showInbox, do: commitHere, say: "alice commits: delivered once, acknowledged."},
			{on: 0, say: verdictSay},
		}},
		{name: "pruned message retried", steps: []step{
			{on: 0, keys: write("remember me"), say: "alice wrote; bob holds it pending."},
			{on: 1, keys: keys(demoCtl('a'), showInbox), do: commitHere, say: "bob commits; his ACK is lost, so alice keeps the message pending."},
			{on: 1, do: pruneHere, say: "bob prunes his finalized records: he forgets that he ever committed that logical ID."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, say: "alice retries. bob no longer recognizes the ID, so it is delivered again: pruning bounds what dedup remembers."},
			{on: 1, keys: showInbox, do: commitHere, say: "bob commits again. His history keeps the message once, and the ACK clears alice's."},
			{on: 0, say: verdictSay},
		}},
		groupScenario(),
		fileScenario(),
	}
}

// retryOther retries on the other profile too (the scenario's step typed
// ctrl+r on the first).
func retryOther(m *Model) tea.Cmd { return m.typeOn(1, []tea.KeyMsg{ctrl(tea.KeyCtrlR)}) }

// commitHere commits everything pending on the profile with the keyboard,
// as the inbox's C would.
func commitHere(m *Model) tea.Cmd {
	i := m.chat.Active()
	return m.world.commitAllCmd(i, m.chat.Pane(i).Self)
}

// arrivalWait bounds how long commitArrived waits for a message on its way:
// long enough for a loaded machine, short enough that a lost envelope does
// not hold the scenario.
const arrivalWait = 20 * time.Second

// commitArrived commits everything pending on the active profile once
// something is pending there, so that a step pressed while the envelope is
// still on its way commits it instead of nothing.
func commitArrived(m *Model) tea.Cmd {
	w, i := m.world, m.chat.Active()
	self := m.chat.Pane(i).Self
	commit := w.commitAllCmd(i, self)
	return func() tea.Msg {
		for deadline := time.Now().Add(arrivalWait); time.Now().Before(deadline); {
			c := w.client(self)
			if c == nil {
				break
			}
			if page, err := c.PendingInbound(w.ctx, engine.PageQuery{Limit: 1}); err != nil || len(page) > 0 {
				break
			}
			select {
			case <-w.ctx.Done():
				return demoMsg{pane: i, what: "commit", err: w.ctx.Err()}
			case <-time.After(50 * time.Millisecond):
			}
		}
		return commit()
	}
}

// commitBoth commits everything pending on both profiles.
func commitBoth(m *Model) tea.Cmd {
	return tea.Batch(m.world.commitAllCmd(0, m.chat.Pane(0).Self), m.world.commitAllCmd(1, m.chat.Pane(1).Self))
}

// pruneHere prunes every finalized record of the active profile.
func pruneHere(m *Model) tea.Cmd {
	w, i := m.world, m.chat.Active()
	self := m.chat.Pane(i).Self
	return func() tea.Msg {
		c := w.client(self)
		if c == nil {
			return demoMsg{pane: i, what: "prune", err: fmt.Errorf("%s is closed", self)}
		}
		// Everything finalized up to now, the clock's instant included.
		n, err := c.Prune(w.ctx, -time.Nanosecond)
		msg := demoMsg{pane: i, what: "prune", err: err}
		if err == nil {
			msg.entries = []eventlog.Entry{{At: w.now(), Name: "demo_prune", Level: eventlog.Demo,
				Text: fmt.Sprintf("%s pruned %d finalized records", self, n)}}
		}
		return msg
	}
}

// startScenario starts scenario n (from 1) and plays its first step.
func (m *Model) startScenario(n int) tea.Cmd {
	if n < 1 || n > len(scenarios()) {
		return nil
	}
	m.scen = &scenarioRun{n: n, s: scenarios()[n-1]}
	return m.stepScenario()
}

// stepScenario plays the next step, or ends the scenario after its last.
func (m *Model) stepScenario() tea.Cmd {
	r := m.scen
	if r == nil {
		return nil
	}
	if r.next >= len(r.s.steps) {
		m.scen = nil
		return nil
	}
	st := r.s.steps[r.next]
	r.next++
	// The step's keys are its own: a draft in the composer (or a space
	// typed there after the last scenario's end) is set aside while they
	// are typed and given back after, never sent with them.
	draft := m.chat.Draft(st.on)
	m.chat.SetDraft(st.on, "")
	cmd := m.typeOn(st.on, st.keys)
	m.chat.SetDraft(st.on, draft)
	if st.do != nil {
		cmd = tea.Batch(cmd, st.do(m))
	}
	return cmd
}

// typeOn gives pane i the keyboard and types keys there, as a person would.
func (m *Model) typeOn(i int, ks []tea.KeyMsg) tea.Cmd {
	cmds := []tea.Cmd{m.chat.Focus(i)}
	m.scripted = true
	for _, k := range ks {
		cmd, _ := m.key(k)
		cmds = append(cmds, cmd)
	}
	m.scripted = false
	return tea.Batch(cmds...)
}

// scenarioHint is the hint line while a scenario plays.
func (m Model) scenarioHint() string {
	r := m.scen
	st := r.s.steps[r.next-1]
	more := "space: next step"
	if r.next >= len(r.s.steps) {
		more = "space: end"
	}
	return fmt.Sprintf("[%d %s · %d/%d] %s · %s, esc: stop", r.n, r.s.name, r.next, len(r.s.steps), st.say, more)
}

// scenarioMenu names the scenarios for the controls' help.
func scenarioMenu() string {
	s := ""
	for i, sc := range scenarios() {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", i+1, sc.name)
	}
	return s
}
