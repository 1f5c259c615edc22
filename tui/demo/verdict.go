package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/wire"
)

// verdictScan is the most history entries the verdict reads per
// conversation side: one page of the store (the demo's conversations are
// far shorter). A message outside the receiver's page is looked up by ID.
const verdictScan = 1000

// flow is the exactly-once count of one direction, from both stores: what
// the sender sent, and what became of each message at the receiver.
type flow struct {
	from, to engine.Address
	sent     int // distinct messages in the sender's history
	once     int // in the receiver's history exactly once
	pending  int // not in the receiver's history yet, still pending on a side
	// unacked counts messages in the receiver's history once that the
	// sender still holds pending: the receiver's ACK was lost or is on its
	// way. They count in once too: the line says both.
	unacked int
	dropped int // discarded by the receiver
	given   int // abandoned by the sender and never committed
	dup     int // in the receiver's history more than once
	lost    int // acknowledged to the sender, yet neither committed nor discarded
	wiped   int // acknowledged before the receiver was reinstalled (its old profile is gone)
	partial bool
	group   string // the group's name, for a member's count of a group's messages (group.go)
	devices int    // the receiving person's devices counted, when more than one (countSiblings)
}

// verdictMsg carries the verdict of both directions.
type verdictMsg struct {
	flows []flow
	err   error
}

// verdictCmd reads both profiles' stores and counts each direction.
func (w *world) verdictCmd(a, b engine.Address) tea.Cmd {
	return func() tea.Msg {
		ca, cb := w.client(a), w.client(b)
		if ca == nil || cb == nil {
			return verdictMsg{err: errors.New("a profile is closed")}
		}
		var flows []flow
		for _, d := range [][2]*engine.Client{{ca, cb}, {cb, ca}} {
			var since time.Time
			w.mu.Lock()
			if dev := w.devs[d[1].Self()]; dev != nil {
				since = dev.reinstalled
			}
			w.mu.Unlock()
			f, err := countFlow(w.ctx, d[0], d[1], since)
			if err != nil {
				return verdictMsg{err: err}
			}
			if f, err = w.countSiblings(w.ctx, d[0], d[1], f); err != nil {
				return verdictMsg{err: err}
			}
			flows = append(flows, f)
		}
		for _, c := range []*engine.Client{ca, cb} {
			gf, err := w.groupFlows(w.ctx, c)
			if err != nil {
				return verdictMsg{err: err}
			}
			flows = append(flows, gf...)
		}
		return verdictMsg{flows: flows}
	}
}

// countFlow counts the messages from sender to receiver; reinstalled is
// when the receiver was last reinstalled (zero: never).
func countFlow(ctx context.Context, sender, receiver *engine.Client, reinstalled time.Time) (flow, error) {
	f := flow{from: sender.Self(), to: receiver.Self()}
	out, err := sender.History(ctx, f.to, 0, verdictScan)
	if err != nil {
		return f, err
	}
	in, err := receiver.History(ctx, f.from, 0, verdictScan)
	if err != nil {
		return f, err
	}
	// The receiver's side is looked up by ID past its page; the sender's
	// page is what is counted.
	f.partial = len(out) == verdictScan
	copies := map[wire.LogicalID]int{}
	for _, e := range in {
		if e.Direction == engine.DirectionIn {
			copies[e.ID]++
		}
	}
	for _, e := range out {
		if e.Direction != engine.DirectionOut {
			continue
		}
		f.sent++
		if e.State == engine.SentPending && copies[e.ID] == 1 {
			f.unacked++
		}
		switch n := copies[e.ID]; {
		case n == 1:
			f.once++
			continue
		case n > 1:
			f.dup++
			continue
		}
		// Not in the receiver's page: ask its store about this ID
		// (pending, finalized, or in the history further back).
		l, err := receiver.Trace(ctx, f.from, e.ID, engine.DirectionIn)
		if err != nil {
			return f, err
		}
		switch {
		case l.State == "committed":
			f.once++
			if e.State == engine.SentPending {
				f.unacked++
			}
		case l.State == "discarded":
			f.dropped++
		case l.State == "pending":
			f.pending++
		case e.State == engine.SentPending:
			f.pending++
		case e.State == engine.SentAbandoned:
			f.given++
		case !reinstalled.IsZero() && !e.At.After(reinstalled):
			f.wiped++
		default:
			f.lost++
		}
	}
	return f, nil
}

// countSiblings makes f a count per person: a message counted once at
// its receiver counts once only if each other device of the receiver's
// person in the demo that has a lane of it (bob's laptop) holds it once
// too; else it counts as what it is there (pending while its lane waits,
// DUPLICATED, or LOST when the lane was acknowledged without a copy).
func (w *world) countSiblings(ctx context.Context, sender, receiver *engine.Client, f flow) (flow, error) {
	sibs := w.siblings(f.to)
	if len(sibs) == 0 {
		return f, nil
	}
	f.devices = 1
	out, err := sender.History(ctx, f.to, 0, verdictScan)
	if err != nil {
		return f, err
	}
	first, err := receiver.History(ctx, f.from, 0, verdictScan)
	if err != nil {
		return f, err
	}
	atFirst := map[wire.LogicalID]int{}
	for _, e := range first {
		if e.Direction == engine.DirectionIn {
			atFirst[e.ID]++
		}
	}
	for _, sib := range sibs {
		rc := w.client(sib)
		if rc == nil {
			continue
		}
		f.devices++
		in, err := rc.History(ctx, f.from, 0, verdictScan)
		if err != nil {
			return f, err
		}
		copies := map[wire.LogicalID]int{}
		for _, e := range in {
			if e.Direction == engine.DirectionIn {
				copies[e.ID]++
			}
		}
		for _, e := range out {
			if e.Direction != engine.DirectionOut {
				continue
			}
			lanes, err := sender.PersonLanes(ctx, f.to, e.ID)
			if err != nil {
				return f, err
			}
			state, ok := personLaneOf(lanes, sib)
			if !ok {
				continue // sent before the device was linked
			}
			n := copies[e.ID]
			if n == 1 {
				continue
			}
			// What the sibling holds changes the person's count only
			// where the first device's was once.
			if atFirst[e.ID] != 1 {
				continue
			}
			f.once--
			switch {
			case n > 1:
				f.dup++
			case state == engine.LanePending || state == engine.LaneRelayAccepted:
				f.pending++
			case state == engine.LaneAcknowledged:
				f.lost++
			default:
				f.given++
			}
		}
	}
	return f, nil
}

// personLaneOf is the state of the lane to dev among lanes.
func personLaneOf(lanes []engine.LaneStatus, dev engine.Address) (engine.LaneState, bool) {
	for _, l := range lanes {
		if l.Recipient == dev && !l.Own {
			return l.State, true
		}
	}
	return 0, false
}

// countVerdict reads the exactly-once verdict again when something changed
// since the last read and no read is in flight.
func (m *Model) countVerdict() tea.Cmd {
	if m.chat.Panes() != 2 || !m.verdictStale || m.verdictBusy {
		return nil
	}
	m.verdictStale, m.verdictBusy = false, true
	return m.world.verdictCmd(m.chat.Pane(0).Self, m.chat.Pane(1).Self)
}

// verdictView is the demo's exactly-once line.
//
// It takes as many lines as the width needs, broken between its parts, so
// that its verdict ("no loss, no duplicate", or what was lost) always
// shows.
func (m Model) verdictView() []string {
	st := m.th.App
	if m.verdict.err != nil {
		return []string{layout.Pad(st.Hint, " exactly once: "+m.verdict.err.Error(), m.w)}
	}
	if len(m.verdict.flows) == 0 {
		return []string{layout.Pad(st.Hint, " exactly once: counting…", m.w)}
	}
	parts := make([]string, 0, len(m.verdict.flows))
	bad := false
	var all flow
	for _, f := range m.verdict.flows {
		parts = append(parts, flowName(f)+" "+counts(f))
		bad = bad || f.dup > 0 || f.lost > 0
		all.sent, all.once, all.unacked, all.pending = all.sent+f.sent, all.once+f.once, all.unacked+f.unacked, all.pending+f.pending
		all.dropped, all.given, all.wiped, all.dup, all.lost = all.dropped+f.dropped, all.given+f.given, all.wiped+f.wiped, all.dup+f.dup, all.lost+f.lost
	}
	style := st.Hint
	if bad {
		style = m.th.Panel.Error
	} else {
		parts = append(parts, "no loss, no duplicate")
	}
	if m.compact() {
		// One line: the whole line when it fits, else the verdict first.
		line := " exactly once · " + strings.Join(parts, " · ")
		if layout.Width(line) > m.w {
			// The verdict first, then the counts of every direction
			// together, cut where the window ends.
			line = " exactly once: no loss, no duplicate · all " + counts(all)
			if bad {
				line = " exactly once: " + strings.Join(problems(m.verdict.flows), " · ")
			}
			line = oneLine(line+" · f1: each", m.w-1)
		}
		return []string{layout.Pad(style, line, m.w)}
	}
	lines := wrapParts(" exactly once", parts, m.w)
	for i, l := range lines {
		lines[i] = layout.Pad(style, l, m.w)
	}
	return lines
}

// wrapParts joins head and parts with " · " into lines of at most w cells,
// breaking only between parts; a line after the first is indented.
func wrapParts(head string, parts []string, w int) []string {
	lines := []string{head}
	for _, p := range parts {
		last := &lines[len(lines)-1]
		if layout.Width(*last)+3+layout.Width(p) <= w {
			*last += " · " + p
			continue
		}
		lines = append(lines, "   "+p)
	}
	return lines
}

// counts is what became of a flow's messages: "3 sent: 1 once, 1 pending".
func counts(f flow) string {
	s := fmt.Sprintf("%d sent: %d once", f.sent, f.once)
	for _, c := range []struct {
		n    int
		name string
	}{{f.unacked, "ACK pending"}, {f.pending, "pending"}, {f.dropped, "discarded"}, {f.given, "abandoned"}, {f.wiped, "gone with a reinstall"}, {f.dup, "DUPLICATED"}, {f.lost, "LOST"}} {
		if c.n > 0 {
			s += fmt.Sprintf(", %d %s", c.n, c.name)
		}
	}
	if f.partial {
		s += fmt.Sprintf(" (newest %d)", verdictScan)
	}
	return s
}

// problems names the flows with a loss or a duplicate, for a line too
// short for every count.
func problems(flows []flow) []string {
	var out []string
	for _, f := range flows {
		if f.dup > 0 {
			out = append(out, fmt.Sprintf("%s %d DUPLICATED", flowName(f), f.dup))
		}
		if f.lost > 0 {
			out = append(out, fmt.Sprintf("%s %d LOST", flowName(f), f.lost))
		}
	}
	return out
}
