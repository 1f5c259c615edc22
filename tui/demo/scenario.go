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
	// group names the group the scenario makes: each run makes a new one
	// (the name, then name-2…).
	group string
	// pinned: each profile must have pinned the other's identity before
	// the first step (an identity can only change once it is pinned).
	pinned bool
	// beforeLists: the scenario plays only while the demo keeps no device
	// lists (a reinstall under a list is another device of the account,
	// which the list does not name: docs/tui.md, scenario 9).
	beforeLists bool
}

// A step's keys go to one profile's pane, in a conversation of its own:
// the other profile, or (group) the run's group, chosen before the keys
// are typed whatever the person chose. done says what the step must have
// done (check.go); the next step plays only once it holds.
type step struct {
	on    int          // the pane the keys go to: 0 alice, 1 bob
	group bool         // the keys write to the run's group
	keys  []tea.KeyMsg // typed as they are
	do    func(m *Model) tea.Cmd
	done  check
	say   string
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
	alice, bob := demoAlice, demoBob
	const (
		collA, collB = "hello from alice", "hello from bob"
		lostEnv      = "this envelope gets lost"
		lostAck      = "acknowledge me"
		crash        = "are you still there?"
		reinstall    = "it's me, reinstalled"
		prune        = "remember me"
	)
	return []scenario{
		{name: "collision", steps: []step{
			{on: 0, keys: keys(demoCtl('s'), demoCtl('H')), done: all(switches(alice, true, 0, 0), switches(bob, true, 0, 0), noSession(alice, bob), noSession(bob, alice)),
				say: "Both sessions are forgotten and delivery to both is held: the next message each way starts a new session."},
			{on: 0, keys: write(collA), done: stored(alice, bob, collA, collA, false),
				say: "alice wrote. Relay accepted is not delivered: the relay holds her PreKey message, bob has not seen it."},
			{on: 1, keys: write(collB), done: stored(bob, alice, collB, collB, false),
				say: "bob wrote too, on a session of his own: two session initiations now cross at the relay."},
			{on: 0, keys: demoCtl('H'), done: all(switches(alice, false, 0, 0), switches(bob, false, 0, 0), either(at(collA, "pending"), at(collB, "pending"))),
				say: "Released. Each side reads the other's initiation; the lower initiation ID wins, the winner drops the loser's message unread and announces its session (session_collision)."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, do: retryOther, done: all(at(collA, "pending"), at(collB, "pending")),
				say: "Both retry: the message that lost goes again with its logical ID, on the winning session; the other side dedups anything it already has."},
			{on: 0, keys: showInbox, do: commitBoth, done: all(at(collA, "committed"), at(collB, "committed"), sender(collA, engine.SentAcknowledged), sender(collB, engine.SentAcknowledged)),
				say: "Both commit. Each ACK tells the sender that the peer's application finalized its message, and clears it."},
			{on: 0, done: onceEach, say: verdictSay},
		}},
		{name: "lost envelope", steps: []step{
			{on: 0, keys: demoCtl('d'), done: switches(alice, false, 1, 0),
				say: "The next envelope alice sends to bob will be lost after the relay accepts it."},
			{on: 0, keys: write(lostEnv), done: all(stored(alice, bob, lostEnv, lostEnv, false), switches(alice, false, 0, 0), at(lostEnv, "unknown")),
				say: "alice wrote: relay accepted, then lost. Relay accepted is not delivered: alice keeps the message pending until bob's ACK."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, done: at(lostEnv, "pending"),
				say: "alice retries: the same logical ID in a fresh envelope. bob has it now, pending his decision."},
			{on: 1, keys: showInbox, do: commitHere, done: all(at(lostEnv, "committed"), sender(lostEnv, engine.SentAcknowledged)),
				say: "bob commits: his ACK clears alice's pending message."},
			{on: 0, done: onceEach, say: verdictSay},
		}},
		{name: "lost ACK", steps: []step{
			{on: 0, keys: write(lostAck), done: all(stored(alice, bob, lostAck, lostAck, false), at(lostAck, "pending")),
				say: "alice wrote; bob holds it pending."},
			{on: 1, keys: keys(demoCtl('a'), showInbox), do: commitHere, done: all(at(lostAck, "committed"), switches(bob, false, 0, 0), sender(lostAck, engine.SentPending)),
				say: "bob commits, but his ACK is lost after the relay accepted it: alice still holds the message pending."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, done: sender(lostAck, engine.SentAcknowledged),
				say: "alice retries. bob knows the logical ID as committed (already_committed): no second copy, and a new ACK goes back and clears it."},
			{on: 0, done: onceEach, say: verdictSay},
		}},
		{name: "crash between commit and event", steps: []step{
			{on: 1, keys: demoCtl('K'), done: crashArmed(1),
				say: "bob will crash right after his next transition commits, before it is shown or marked presented."},
			{on: 0, keys: write(crash), done: all(stored(alice, bob, crash, crash, false), paneIs(1, "crashed")),
				say: "alice wrote; bob stored it durably and crashed before showing it."},
			{on: 1, keys: demoCtl('o'), done: all(paneIs(1, ""), at(crash, "pending")),
				say: "bob reopens: his store is ahead of what he had shown (state_resync_required), every list is read again, and the message is pending, not lost."},
			{on: 1, keys: showInbox, do: commitHere, done: all(at(crash, "committed"), sender(crash, engine.SentAcknowledged)),
				say: "bob commits; the ACK clears alice's message."},
			{on: 0, done: onceEach, say: verdictSay},
		}},
		{name: "identity change", pinned: true, beforeLists: true, steps: []step{
			{on: 1, keys: demoCtl('i'), done: reinstalled(bob),
				say: "bob is reinstalled: a new identity for the same address, registered again at the relay."},
			{on: 1, keys: write(reinstall), done: all(stored(bob, alice, reinstall, reinstall, false), changedShown(0, true)),
				say: "bob writes with his new identity: alice refuses it (identity_changed), shows the new safety number and blocks sending to bob/1."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlT)}, done: changedShown(0, false),
				say: "alice compares the safety number and accepts the new identity (ctrl+t)."},
			{on: 1, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, done: at(reinstall, "pending"),
				say: "bob retries: what alice refused goes again with its logical ID, to an identity she now trusts."},
			{on: 0, keys: showInbox, do: commitHere, done: all(at(reinstall, "committed"), sender(reinstall, engine.SentAcknowledged)),
				say: "alice commits: delivered once, acknowledged."},
			{on: 0, done: onceEach, say: verdictSay},
		}},
		{name: "pruned message retried", steps: []step{
			{on: 0, keys: write(prune), done: all(stored(alice, bob, prune, prune, false), at(prune, "pending")),
				say: "alice wrote; bob holds it pending."},
			{on: 1, keys: keys(demoCtl('a'), showInbox), do: commitHere, done: all(at(prune, "committed"), switches(bob, false, 0, 0), sender(prune, engine.SentPending)),
				say: "bob commits; his ACK is lost, so alice keeps the message pending."},
			{on: 1, do: pruneHere, done: pruned(prune),
				say: "bob prunes his finalized records: he forgets that he ever committed that logical ID."},
			{on: 0, keys: []tea.KeyMsg{ctrl(tea.KeyCtrlR)}, done: at(prune, "pending"),
				say: "alice retries. bob no longer recognizes the ID, so it is delivered again: pruning bounds what dedup remembers."},
			{on: 1, keys: showInbox, do: commitHere, done: all(at(prune, "committed"), sender(prune, engine.SentAcknowledged)),
				say: "bob commits again. His history keeps the message once, and the ACK clears alice's."},
			{on: 0, done: onceEach, say: verdictSay},
		}},
		groupScenario(),
		fileScenario(),
		laptopScenario(),
	}
}

// either holds when one of a and b does.
func either(a, b check) check {
	return func(v *checkView) error {
		if a(v) == nil {
			return nil
		}
		return b(v)
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
