package demo

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/layout"
	"github.com/parley-chat/parley/wire"
)

// carol is the demo's third profile, made on demand (the group scenario):
// she has no pane, and her loop commits every delivery as it arrives, so
// that what reaches her is finalized and acknowledged without a key.
var carol = engine.MustParseAddress("carol/1")

// joinHeadless makes addr's profile if it is not open yet, with a loop
// that commits on arrival, and drains what it reports (no pane reads it).
func (w *world) joinHeadless(ctx context.Context, addr engine.Address) (bool, error) {
	if w.client(addr) != nil {
		return false, nil
	}
	w.mu.Lock()
	d := w.devs[addr]
	if d == nil {
		pol := w.policy
		pol.Commit = engine.CommitOnArrival
		d = &device{addr: addr, notes: make(chan eventlog.Entry, 64), policy: pol.WithDefaults()}
		w.devs[addr] = d
	}
	w.mu.Unlock()
	a, err := w.create(ctx, addr)
	if err != nil {
		return false, err
	}
	go func() {
		for {
			select {
			case <-a.Events:
			case <-a.Notes:
			case <-a.Done:
				return
			}
		}
	}()
	return true, nil
}

// joinCarol is the group scenario's first step: carol joins the demo.
func joinCarol(m *Model) tea.Cmd {
	w := m.world
	return func() tea.Msg {
		made, err := w.joinHeadless(w.ctx, carol)
		e := eventlog.Entry{At: w.now(), Name: "demo_carol", Level: eventlog.Demo,
			Text: carol.String() + " joined the demo: a third profile without a pane, her loop commits every delivery as it arrives"}
		switch {
		case err != nil:
			e = eventlog.Entry{At: w.now(), Name: engine.ErrorName(err), Level: eventlog.Error, Text: "carol joining the demo: " + err.Error()}
		case !made:
			e.Text = carol.String() + " is already in the demo"
		}
		return demoMsg{pane: 0, what: "carol", entries: []eventlog.Entry{e}}
	}
}

// dropToCarol arms the loss of alice's next envelope to carol (and only to
// her: the other lanes of the same group message pass).
func dropToCarol(m *Model) tea.Cmd {
	w, self := m.world, m.chat.Pane(0).Self
	d := w.device(self)
	if d == nil {
		return nil
	}
	w.mu.Lock()
	faults := d.faults
	w.mu.Unlock()
	if faults == nil {
		return nil
	}
	faults.arm(carol, false)
	m.readFlags(0)
	m.chat.Note(0, eventlog.Entry{Name: "demo", Level: eventlog.Demo,
		Text: fmt.Sprintf("the next envelope %s → %s will be lost after the relay accepts it", self, carol)})
	return nil
}

// chooseTrio chooses #trio in alice's conversations (↓ past her peers)
// and arms the loss of her next envelope to carol.
func chooseTrio(m *Model) tea.Cmd {
	return tea.Batch(m.chat.SelectGroup(0, "trio"), dropToCarol(m))
}

// retryCarol retries alice's pending messages to carol: her lane of the
// group message goes again, alone (bob's is acknowledged).
func retryCarol(m *Model) tea.Cmd {
	w, self := m.world, m.chat.Pane(0).Self
	return func() tea.Msg {
		c := w.client(self)
		if c == nil {
			return demoMsg{pane: 0, what: "retry", entries: []eventlog.Entry{{At: w.now(), Name: "demo", Level: eventlog.Error, Text: self.String() + " is closed"}}}
		}
		ids, err := c.Retry(w.ctx, carol)
		e := eventlog.Entry{At: w.now(), Name: "demo_retry", Level: eventlog.Demo,
			Text: fmt.Sprintf("%s retried %d message(s) to %s only", self, len(ids), carol)}
		if err != nil {
			e = eventlog.Entry{At: w.now(), Name: engine.ErrorName(err), Level: eventlog.Error, Text: "retry to carol: " + err.Error()}
		}
		return demoMsg{pane: 0, what: "retry", entries: []eventlog.Entry{e}}
	}
}

// groupFlows counts, for each group sender keeps, each other member's
// copies of sender's group messages: one flow per member with an open
// client in the demo.
func (w *world) groupFlows(ctx context.Context, sender *engine.Client) ([]flow, error) {
	groups, err := sender.Groups(ctx)
	if err != nil {
		return nil, nil // a client without groups has no group flows
	}
	var flows []flow
	for _, g := range groups {
		out, err := sender.GroupHistory(ctx, g.ID, 0, verdictScan)
		if err != nil {
			return nil, err
		}
		for _, mem := range g.Roster.Members {
			to, err := engine.ParseAddress(mem.Address)
			if err != nil || to == sender.Self() {
				continue
			}
			rc := w.client(to)
			if rc == nil {
				continue
			}
			f, err := countGroupFlow(ctx, g.ID, sender.Self(), out, rc)
			if err != nil {
				return nil, err
			}
			f.group = g.Name
			if f.sent > 0 {
				flows = append(flows, f)
			}
		}
	}
	return flows, nil
}

// countGroupFlow counts sender's messages of group id (out, its history)
// in receiver's history of the group.
func countGroupFlow(ctx context.Context, id wire.GroupID, sender engine.Address, out []engine.GroupEntry, receiver *engine.Client) (flow, error) {
	f := flow{from: sender, to: receiver.Self(), partial: len(out) == verdictScan}
	in, err := receiver.GroupHistory(ctx, id, 0, verdictScan)
	if err != nil {
		return f, err
	}
	copies := map[wire.LogicalID]int{}
	for _, e := range in {
		if e.Sender == sender && !e.Own {
			copies[e.ID]++
		}
	}
	for _, e := range out {
		if !e.Own {
			continue
		}
		lane, ok := laneOf(e.Lanes, f.to)
		if !ok {
			continue // the member was not in the roster this message named
		}
		f.sent++
		switch n := copies[e.ID]; {
		case n == 1:
			f.once++
			if lane == engine.LanePending || lane == engine.LaneRelayAccepted {
				f.unacked++
			}
		case n > 1:
			f.dup++
		case lane == engine.LanePending || lane == engine.LaneRelayAccepted:
			f.pending++
		case lane == engine.LaneAcknowledged:
			l, err := receiver.Life(ctx, sender, e.ID, engine.DirectionIn)
			switch {
			case err == nil && l.State == "discarded":
				f.dropped++
			case err == nil && l.State == "pending":
				f.pending++
			default:
				f.lost++
			}
		default: // abandoned, removed, not_a_member: ended without an ACK
			f.given++
		}
	}
	return f, nil
}

func laneOf(lanes []engine.Lane, to engine.Address) (engine.LaneState, bool) {
	for _, l := range lanes {
		if l.Recipient == to {
			return l.State, true
		}
	}
	return 0, false
}

// flowName names a flow on the exactly-once line: "alice→bob", or
// "#trio alice→carol" for a group's.
func flowName(f flow) string {
	s := f.from.User + "→" + f.to.User
	if f.group != "" {
		s = "#" + layout.OneLine([]byte(f.group), 64) + " " + s
	}
	return s
}

// groupVerdictSay is the last narration of the group scenario.
const groupVerdictSay = "Done. The exactly-once line counts #trio per member: alice's message is in bob's and carol's group history once each, and only carol's lane was sent twice."

// groupScenario is the lost envelope in a group of three.
func groupScenario() scenario {
	return scenario{name: "group lane lost", steps: []step{
		{on: 0, do: joinCarol, say: "carol joins: a third profile, made on demand, without a pane; her loop commits what arrives."},
		{on: 0, keys: []tea.KeyMsg{alt('1'), runes("g"), runes("create trio bob/1 carol/1"), ctrl(tea.KeyEnter)},
			say: "alice creates #trio with bob and carol (g in the conversations): the roster goes to each member once, on each pairwise session."},
		{on: 0, keys: []tea.KeyMsg{alt('1')}, do: chooseTrio,
			say: "alice chooses #trio: her composer writes to the group. The next envelope alice → carol will be lost after the relay accepts it."},
		{on: 0, keys: write("lunch at noon?"), say: "alice writes to #trio: one logical ID, a lane per member. The relay accepted both envelopes; carol's is lost, so her lane stays pending."},
		{on: 1, keys: showInbox, do: commitArrived, say: "bob commits: his ACK clears his lane only. alice's matrix says ✓ 1/2 · carol pending."},
		{on: 0, do: retryCarol, say: "alice retries carol's lane (r on the lane in her outbox): only that lane goes again, with the same logical ID; carol commits on arrival and her ACK completes the matrix."},
		{on: 0, say: groupVerdictSay},
	}}
}
