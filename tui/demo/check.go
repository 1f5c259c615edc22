// What each step of a guided scenario must have done, read from the
// profiles' stores and from what the panes showed: a step whose effect
// does not come within stepWait stops the scenario, and the hint says which
// part did not happen, instead of narrating the next steps as if it had.

package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui"
	"github.com/parley-chat/parley/wire"
)

// stepWait bounds how long a step's effect may take to show: long enough
// for a loaded machine (the whole demo runs in one process), short enough
// that a step that did not happen is said while the person still waits.
const stepWait = 20 * time.Second

// checkPoll is how often a step's check reads again.
const checkPoll = 50 * time.Millisecond

// A check reports nil when what its step should have done is done, or
// what is missing, in the words the hint shows.
type check func(v *checkView) error

// demoFacts is what the model showed, published after every update for
// the checks, which run in commands (Model.facts).
type demoFacts struct {
	panes      []tui.PaneState
	crashArmed []bool
}

// mark is a message a scenario sent, found in its sender's store by its
// body when the step that wrote it was checked.
type mark struct {
	from, to engine.Address // to is zero for a group message
	id       wire.LogicalID
	group    wire.GroupID // for a group message
	inGroup  bool
}

// checkView is what a check reads: the world, the facts as last published,
// and the scenario run's marks (read-only here; what a check finds comes
// back in found).
type checkView struct {
	ctx      context.Context
	w        *world
	facts    *atomic.Pointer[demoFacts]
	before   map[wire.LogicalID]bool // messages that existed when the run began
	marks    map[string]mark
	found    map[string]mark
	group    string
	idents   map[engine.Address]engine.IdentityKey
	fileSize int64
}

// checkMsg is the outcome of a step's check.
type checkMsg struct {
	serial, step int
	found        map[string]mark
	err          error
}

// checkCmd reads until step i's check holds or stepWait passes.
func (m *Model) checkCmd(r *scenarioRun, i int) tea.Cmd {
	done := r.s.steps[i].done
	marks := make(map[string]mark, len(r.marks))
	for k, v := range r.marks {
		marks[k] = v
	}
	v := &checkView{ctx: m.world.ctx, w: m.world, facts: m.facts, before: r.before, marks: marks,
		found: map[string]mark{}, group: r.group, idents: r.idents, fileSize: m.fileSize}
	serial, wait := r.serial, m.stepWait
	return func() tea.Msg {
		deadline := time.Now().Add(wait)
		for {
			err := done(v)
			if err == nil || !time.Now().Before(deadline) {
				return checkMsg{serial: serial, step: i, found: v.found, err: err}
			}
			select {
			case <-v.ctx.Done():
				return checkMsg{serial: serial, step: i, err: v.ctx.Err()}
			case <-time.After(checkPoll):
			}
		}
	}
}

func (v *checkView) now() demoFacts {
	if f := v.facts.Load(); f != nil {
		return *f
	}
	return demoFacts{}
}

func (v *checkView) pane(i int) tui.PaneState {
	if f := v.now(); i < len(f.panes) {
		return f.panes[i]
	}
	return tui.PaneState{}
}

func (v *checkView) client(a engine.Address) (*engine.Client, error) {
	if c := v.w.client(a); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("%s is closed", a)
}

func (v *checkView) mark(key string) (mark, bool) {
	if m, ok := v.found[key]; ok {
		return m, true
	}
	m, ok := v.marks[key]
	return m, ok
}

// marked returns the message the scenario wrote as key, or why it has
// none yet.
func (v *checkView) marked(key string) (mark, error) {
	if m, ok := v.mark(key); ok {
		return m, nil
	}
	return mark{}, fmt.Errorf("no message %q was stored", key)
}

// all holds when every check does, and says the first that does not.
func all(cs ...check) check {
	return func(v *checkView) error {
		for _, c := range cs {
			if err := c(v); err != nil {
				return err
			}
		}
		return nil
	}
}

// stored: from's store holds a new message to `to` whose body is body
// (or, with prefix, starts with it); it is marked as key.
func stored(from, to engine.Address, key, body string, prefix bool) check {
	return func(v *checkView) error {
		if _, ok := v.mark(key); ok {
			return nil
		}
		c, err := v.client(from)
		if err != nil {
			return err
		}
		h, err := c.History(v.ctx, to, 0, 100)
		if err != nil {
			return err
		}
		for _, e := range h {
			b := string(e.Body)
			if e.Direction == engine.DirectionOut && !v.before[e.ID] && (b == body || prefix && strings.HasPrefix(b, body)) {
				v.found[key] = mark{from: from, to: to, id: e.ID}
				return nil
			}
		}
		return fmt.Errorf("%s's message %q to %s was not stored", from.User, body, to)
	}
}

// receiverState is where the message marked key stands at its receiver.
func (v *checkView) receiverState(key string) (mark, string, error) {
	m, err := v.marked(key)
	if err != nil {
		return m, "", err
	}
	c, err := v.client(m.to)
	if err != nil {
		return m, "", err
	}
	l, err := c.Trace(v.ctx, m.from, m.id, engine.DirectionIn)
	return m, l.State, err
}

// at: the message marked key is in one of states at its receiver.
func at(key string, states ...string) check {
	return func(v *checkView) error {
		m, state, err := v.receiverState(key)
		if err != nil {
			return err
		}
		for _, s := range states {
			if state == s {
				return nil
			}
		}
		if state == "unknown" {
			state = "not received"
		}
		return fmt.Errorf("%q is %s at %s (want %s)", key, state, m.to, strings.Join(states, " or "))
	}
}

// sender: the message marked key is in state at its sender.
func sender(key string, state engine.SentState) check {
	return func(v *checkView) error {
		m, err := v.marked(key)
		if err != nil {
			return err
		}
		c, err := v.client(m.from)
		if err != nil {
			return err
		}
		l, err := c.Trace(v.ctx, m.to, m.id, engine.DirectionOut)
		if err != nil {
			return err
		}
		if got := l.State; got != state.String() && !(state == engine.SentPending && got == "on_device") {
			return fmt.Errorf("%q is %s at %s (want %s)", key, got, m.from, state)
		}
		return nil
	}
}

// pruned: the receiver no longer keeps the finalized record of key.
func pruned(key string) check {
	return func(v *checkView) error {
		m, err := v.marked(key)
		if err != nil {
			return err
		}
		c, err := v.client(m.to)
		if err != nil {
			return err
		}
		if _, err := c.Finalized(v.ctx, m.from, m.id); !errors.Is(err, engine.ErrNotPending) {
			return fmt.Errorf("%s still keeps the finalized record of %q (%v)", m.to, key, err)
		}
		return nil
	}
}

// switches: a's hold and the number of losses still armed there.
func switches(a engine.Address, held bool, drops, acks int) check {
	return func(v *checkView) error {
		f := v.w.flags(a)
		switch {
		case f.held != held:
			return fmt.Errorf("delivery to %s is %s", a, map[bool]string{true: "held", false: "not held"}[f.held])
		case f.dropMsg != drops:
			return fmt.Errorf("%s has %d envelope loss(es) armed, want %d", a, f.dropMsg, drops)
		case f.dropAck != acks:
			return fmt.Errorf("%s has %d ACK loss(es) armed, want %d", a, f.dropAck, acks)
		}
		return nil
	}
}

// noSession: a keeps no session with peer.
func noSession(a, peer engine.Address) check {
	return func(v *checkView) error {
		c, err := v.client(a)
		if err != nil {
			return err
		}
		if ok, err := c.HasSession(v.ctx, peer); err != nil || ok {
			return fmt.Errorf("%s still has a session with %s (%v)", a, peer, err)
		}
		return nil
	}
}

// paneIs: pane i is open, or closed for the reason why ("crashed").
func paneIs(i int, why string) check {
	return func(v *checkView) error {
		p := v.pane(i)
		switch {
		case why == "" && !p.Open:
			return fmt.Errorf("%s is not open (%s)", p.Self, p.Closed)
		case why != "" && p.Closed != why:
			return fmt.Errorf("%s is not %s", p.Self, why)
		}
		return nil
	}
}

// shownWaiting: pane i's conversation shows the message marked key
// waiting (a key pressed there acts on what it shows).
func shownWaiting(i int, key string) check {
	return func(v *checkView) error {
		m, err := v.marked(key)
		if err != nil {
			return err
		}
		p := v.pane(i)
		for _, id := range p.Waiting {
			if id == m.id {
				return nil
			}
		}
		return fmt.Errorf("%s's conversation does not show %q waiting", p.Self, key)
	}
}

// crashArmed: pane i will crash after its next transition.
func crashArmed(i int) check {
	return func(v *checkView) error {
		if f := v.now(); i >= len(f.crashArmed) || !f.crashArmed[i] {
			return fmt.Errorf("no crash is armed on %s", v.pane(i).Self)
		}
		return nil
	}
}

// reinstalled: a is open with another identity than when the run began.
func reinstalled(a engine.Address) check {
	return func(v *checkView) error {
		c, err := v.client(a)
		if err != nil {
			return err
		}
		if c.Identity().Equal(v.idents[a]) {
			return fmt.Errorf("%s still has its old identity", a)
		}
		return nil
	}
}

// changedShown: pane i shows its peer's identity change, not accepted yet,
// or (shown false) has accepted it.
func changedShown(i int, shown bool) check {
	return func(v *checkView) error {
		p := v.pane(i)
		if p.IdentityChanged != shown {
			if shown {
				return fmt.Errorf("%s shows no identity change of %s", p.Self, p.Peer)
			}
			return fmt.Errorf("%s has not accepted %s's new identity", p.Self, p.Peer)
		}
		if shown {
			// ctrl+t accepts the key whose safety number is shown: it must be.
			if p.NewFingerprint == "" {
				return fmt.Errorf("%s does not show the safety number of %s's new identity yet", p.Self, p.Peer)
			}
			return nil
		}
		c, err := v.client(p.Self)
		if err != nil {
			return err
		}
		peer, err := v.client(p.Peer)
		if err != nil {
			return err
		}
		if pin, err := pinOf(v.ctx, c, peer); err != nil || pin != pinCurrent {
			return fmt.Errorf("%s has not pinned %s's new identity (%v)", p.Self, p.Peer, err)
		}
		return nil
	}
}

// onceEach is the verdict step's check: every message the scenario wrote
// is in its receiver's history exactly once (in each member's group
// history once, for a group message) and acknowledged to its sender.
func onceEach(v *checkView) error {
	for key, m := range v.marks {
		if m.inGroup {
			if err := groupOnce(v, key, m); err != nil {
				return err
			}
			continue
		}
		rc, err := v.client(m.to)
		if err != nil {
			return err
		}
		h, err := rc.History(v.ctx, m.from, 0, verdictScan)
		if err != nil {
			return err
		}
		n := 0
		for _, e := range h {
			if e.Direction == engine.DirectionIn && e.ID == m.id {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%q is in %s's history %d times, not once", key, m.to, n)
		}
		if err := sender(key, engine.SentAcknowledged)(v); err != nil {
			return err
		}
	}
	return nil
}

// fileMade: the scenario's file is in the demo's directory, whole.
func fileMade(v *checkView) error {
	fi, err := os.Stat(v.w.demoFile())
	if err != nil || fi.Size() != v.fileSize {
		return fmt.Errorf("alice has no %d-byte file to send (%v)", v.fileSize, err)
	}
	return nil
}
