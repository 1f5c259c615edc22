package demo

import (
	"context"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/eventlog"
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
		d = &device{addr: addr, notes: make(chan eventlog.Entry, 64), policy: pol}
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
func dropToCarol(m *Model) {
	w, self := m.world, m.chat.Pane(0).Self
	d := w.device(self)
	if d == nil {
		return
	}
	w.mu.Lock()
	faults := d.faults
	w.mu.Unlock()
	if faults == nil {
		return
	}
	faults.arm(carol, false)
	m.readFlags(0)
	m.chat.Note(0, eventlog.Entry{Name: "demo", Level: eventlog.Demo,
		Text: fmt.Sprintf("the next envelope %s → %s will be lost after the relay accepts it", self, carol)})
}

// createGroup types, in alice's conversations, the group command that
// creates the run's group with bob and carol.
func createGroup(m *Model) tea.Cmd {
	return m.typeOn(0, []tea.KeyMsg{alt('1'), runes("g"), runes("create " + m.scen.group + " bob/1 carol/1"), ctrl(tea.KeyEnter)})
}

// chooseTrio chooses the run's group in alice's conversations (↓ past her
// peers) and arms the loss of her next envelope to carol.
func chooseTrio(m *Model) tea.Cmd {
	cmd, _ := m.chat.ChooseGroup(0, m.scen.group)
	dropToCarol(m)
	return cmd
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
			var since time.Time
			w.mu.Lock()
			if d := w.devs[to]; d != nil {
				since = d.reinstalled
			}
			w.mu.Unlock()
			f, err := countGroupFlow(ctx, g.ID, sender.Self(), out, rc, since)
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
// in receiver's history of the group; reinstalled is when the receiver was
// last reinstalled (zero: never): what it had acknowledged before is gone
// with its old profile, not lost.
func countGroupFlow(ctx context.Context, id wire.GroupID, sender engine.Address, out []engine.GroupEntry, receiver *engine.Client, reinstalled time.Time) (flow, error) {
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
			l, err := receiver.Trace(ctx, sender, e.ID, engine.DirectionIn)
			switch {
			case err == nil && l.State == "discarded":
				f.dropped++
			case err == nil && l.State == "pending":
				f.pending++
			case !reinstalled.IsZero() && !e.At.After(reinstalled):
				f.wiped++
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
	if f.devices > 1 {
		s += fmt.Sprintf(" (%d devices)", f.devices)
	}
	if f.group != "" {
		s = "#" + layout.OneLine([]byte(f.group), 64) + " " + s
	}
	return s
}

// groupVerdictSay is the last narration of the group scenario.
const groupVerdictSay = "Done. The exactly-once line counts #trio per member: alice's message is in bob's and carol's group history once each, and only carol's lane was sent twice."

// groupScenario is the lost envelope in a group of three. The group is
// new on each run (#trio, then #trio-2…): a group made by an earlier run
// may predate a reinstall that its members' profiles do not know of.
func groupScenario() scenario {
	const body = "lunch at noon?"
	return scenario{name: "group lane lost", group: "trio", steps: []step{
		{on: 0, do: joinCarol, done: joined(carol),
			say: "carol joins: a third profile, made on demand, without a pane; her loop commits what arrives."},
		{on: 0, do: createGroup, done: groupMade,
			say: "alice creates #trio with bob and carol (g in the conversations): the roster goes to each member once, on each pairwise session."},
		{on: 0, keys: []tea.KeyMsg{alt('1')}, do: chooseTrio, done: all(groupChosen, switches(demoAlice, false, 1, 0)),
			say: "alice chooses #trio: her composer writes to the group. The next envelope alice → carol will be lost after the relay accepts it."},
		{on: 0, group: true, keys: write(body), done: all(groupStored(body), switches(demoAlice, false, 0, 0), groupAt(body, demoBob, "pending", "committed")),
			say: "alice writes to #trio: one logical ID, a lane per member. The relay accepted both envelopes; carol's is lost, so her lane stays pending."},
		{on: 1, keys: showInbox, do: commitArrived, done: all(lane(body, demoBob, engine.LaneAcknowledged), lane(body, carol, engine.LanePending, engine.LaneRelayAccepted)),
			say: "bob commits: his ACK clears his lane only. alice's matrix says ✓ 1/2 · carol pending."},
		{on: 0, group: true, do: retryCarol, done: lane(body, carol, engine.LaneAcknowledged),
			say: "alice retries carol's lane (r on the lane in her outbox): only that lane goes again, with the same logical ID; carol commits on arrival and her ACK completes the matrix."},
		{on: 0, done: onceEach, say: groupVerdictSay},
	}}
}

// joined: a's profile is open in the demo.
func joined(a engine.Address) check {
	return func(v *checkView) error {
		_, err := v.client(a)
		return err
	}
}

// runGroup is the run's group at alice.
func (v *checkView) runGroup() (engine.GroupInfo, error) {
	c, err := v.client(demoAlice)
	if err != nil {
		return engine.GroupInfo{}, err
	}
	gs, err := c.Groups(v.ctx)
	if err != nil {
		return engine.GroupInfo{}, err
	}
	for _, g := range gs {
		if g.Name == v.group {
			return g, nil
		}
	}
	return engine.GroupInfo{}, fmt.Errorf("alice has no group #%s", v.group)
}

// groupMade: alice keeps the run's group with bob and carol, and her
// conversations list it (the next step chooses it there).
func groupMade(v *checkView) error {
	g, err := v.runGroup()
	if err != nil {
		return err
	}
	if n := len(g.Roster.Members); n != 3 {
		return fmt.Errorf("#%s has %d members, want alice, bob and carol", v.group, n)
	}
	// The creation is stored first and its lanes go out after: carol must
	// have the roster before the next step arms the loss of alice's next
	// envelope to her, or the loss would take the roster instead.
	c, err := v.client(carol)
	if err != nil {
		return err
	}
	if _, err := c.Group(v.ctx, g.ID); err != nil {
		return fmt.Errorf("carol has not received #%s yet: %w", v.group, err)
	}
	for _, name := range v.pane(0).Groups {
		if name == v.group {
			return nil
		}
	}
	return fmt.Errorf("alice's conversations do not list #%s", v.group)
}

// groupChosen: alice's composer writes to the run's group.
func groupChosen(v *checkView) error {
	if g := v.pane(0).Group; g != v.group {
		return fmt.Errorf("alice's composer writes to %q, not #%s", g, v.group)
	}
	return nil
}

// groupStored: alice's group history holds her message body, marked as
// body.
func groupStored(body string) check {
	return func(v *checkView) error {
		if _, ok := v.mark(body); ok {
			return nil
		}
		g, err := v.runGroup()
		if err != nil {
			return err
		}
		c, err := v.client(demoAlice)
		if err != nil {
			return err
		}
		h, err := c.GroupHistory(v.ctx, g.ID, 0, verdictScan)
		if err != nil {
			return err
		}
		for _, e := range h {
			if e.Own && string(e.Body) == body {
				v.found[body] = mark{from: demoAlice, id: e.ID, group: g.ID, inGroup: true}
				return nil
			}
		}
		return fmt.Errorf("alice's message %q to #%s was not stored", body, v.group)
	}
}

// groupLanes are the lanes of the group message marked key, at alice.
func (v *checkView) groupLanes(key string) (mark, []engine.Lane, error) {
	m, err := v.marked(key)
	if err != nil {
		return m, nil, err
	}
	c, err := v.client(m.from)
	if err != nil {
		return m, nil, err
	}
	h, err := c.GroupHistory(v.ctx, m.group, 0, verdictScan)
	if err != nil {
		return m, nil, err
	}
	for _, e := range h {
		if e.Own && e.ID == m.id {
			return m, e.Lanes, nil
		}
	}
	return m, nil, fmt.Errorf("%q is not in %s's group history", key, m.from)
}

// lane: the lane of the group message key to member is in one of states.
func lane(key string, member engine.Address, states ...engine.LaneState) check {
	return func(v *checkView) error {
		_, lanes, err := v.groupLanes(key)
		if err != nil {
			return err
		}
		got, ok := laneOf(lanes, member)
		for _, s := range states {
			if ok && got == s {
				return nil
			}
		}
		return fmt.Errorf("the lane of %q to %s is %s (want %s)", key, member, got, states[0])
	}
}

// groupAt: the group message key is in one of states at member.
func groupAt(key string, member engine.Address, states ...string) check {
	return func(v *checkView) error {
		m, err := v.marked(key)
		if err != nil {
			return err
		}
		c, err := v.client(member)
		if err != nil {
			return err
		}
		l, err := c.Trace(v.ctx, m.from, m.id, engine.DirectionIn)
		if err != nil {
			return err
		}
		for _, s := range states {
			if l.State == s {
				return nil
			}
		}
		return fmt.Errorf("%q is %s at %s", key, l.State, member)
	}
}

// groupOnce: the group message key is in each member's group history once
// and every lane is acknowledged.
func groupOnce(v *checkView, key string, m mark) error {
	_, lanes, err := v.groupLanes(key)
	if err != nil {
		return err
	}
	for _, l := range lanes {
		if l.State != engine.LaneAcknowledged {
			return fmt.Errorf("the lane of %q to %s is %s", key, l.Recipient, l.State)
		}
		c, err := v.client(l.Recipient)
		if err != nil {
			return err
		}
		h, err := c.GroupHistory(v.ctx, m.group, 0, verdictScan)
		if err != nil {
			return err
		}
		n := 0
		for _, e := range h {
			if !e.Own && e.Sender == m.from && e.ID == m.id {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%q is in %s's group history %d times, not once", key, l.Recipient, n)
		}
	}
	return nil
}
