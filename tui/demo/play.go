// Playing a guided scenario: setting the stage, one step per press, and
// each step checked before the next plays.
//
// Every run starts from the same footing whatever came before (another
// scenario, one stopped half-way, the person's own keys): delivery
// released, links plugged in, no loss or crash armed, commits by hand
// without automatic retry, both profiles open, each side's pinned identity
// the other's current one, and each profile writing to the other with
// nothing typed. What the stage changed is noted in the events. Each
// step's keys then go to the conversation the step names, the composer's
// text set aside while they are typed; and what the step must have done
// is read from the stores (check.go) before the next one plays.

package demo

import (
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// scenarioRun is a scenario being played.
type scenarioRun struct {
	n      int // its number, from 1
	s      scenario
	serial int // tells this run's results from an earlier run's
	next   int // the step that space plays next
	// queued counts presses of space made while a profile was still being
	// reopened or reinstalled, the stage set or a step checked: each plays
	// once the demo is ready, so that no step's keys go to a profile that
	// is not there yet or run ahead of what they need.
	queued int

	staging  bool // the stage is being set (prepare.go's read in flight or due)
	reading  bool // the stage's read is in flight
	checking bool // the last step's check is in flight
	failed   string

	// What the stage read: the messages that existed, the identities, the
	// run's group; and the messages the steps wrote, by body.
	before map[wire.LogicalID]bool
	idents map[engine.Address]engine.IdentityKey
	group  string
	marks  map[string]mark
}

// settling reports whether the next step must wait: a profile is being
// reopened or reinstalled, the sessions are being forgotten, the stage is
// being set, the last step is being checked, or the step's profile is
// armed to crash and has not yet.
func (m Model) settling() bool {
	if m.forgetting > 0 {
		return true
	}
	for i := range m.chat.Panes() {
		if p := m.chat.Pane(i); !p.Open && (p.Closed == "reopening" || p.Closed == "reinstalling") {
			return true
		}
	}
	if r := m.scen; r != nil {
		if r.staging || r.checking {
			return true
		}
		if r.next < len(r.s.steps) {
			if on := r.s.steps[r.next].on; on < len(m.crashArmed) && m.crashArmed[on] {
				return true
			}
		}
	}
	return false
}

// nextStep plays the next step, or queues it while the demo is not ready.
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

// playQueued reads the stage when it is due, then plays the steps asked
// for while the demo was not ready.
func (m *Model) playQueued() tea.Cmd {
	cmds := []tea.Cmd{m.readStage()}
	for m.scen != nil && m.scen.queued > 0 && !m.settling() {
		m.scen.queued--
		cmds = append(cmds, m.stepScenario())
	}
	return tea.Batch(cmds...)
}

// startScenario starts scenario n (from 1): it sets the stage, then plays
// the first step.
func (m *Model) startScenario(n int) tea.Cmd {
	if n < 1 || n > len(scenarios()) {
		return nil
	}
	m.serial++
	m.scen = &scenarioRun{n: n, s: scenarios()[n-1], serial: m.serial, staging: true, queued: 1, marks: map[string]mark{}}
	if m.scen.s.beforeLists && m.world.lists.Load() {
		m.scen.fail(0, errors.New("the demo keeps device lists since bob's laptop was linked (scenario 9), and under a list a reinstalled phone is a device the list does not name: restart parley demo to play this scenario"))
		return nil
	}
	return tea.Batch(m.resetStage(), m.playQueued())
}

// fail stops the run where it is: the hint says what did not happen.
func (r *scenarioRun) fail(step int, err error) {
	r.failed = fmt.Sprintf("step %d did not happen: %v", step, err)
	if step == 0 {
		r.failed = fmt.Sprintf("the stage could not be set: %v", err)
	}
	r.queued, r.checking, r.staging = 0, false, false
}

// stepScenario plays the next step, or ends the scenario after its last.
func (m *Model) stepScenario() tea.Cmd {
	r := m.scen
	if r == nil {
		return nil
	}
	if r.next >= len(r.s.steps) || r.failed != "" {
		m.scen = nil
		return nil
	}
	st := r.s.steps[r.next]
	r.next++
	var cmds []tea.Cmd
	if len(st.keys) > 0 || st.do != nil {
		// The step's conversation, whatever the person chose since.
		if st.group {
			cmd, ok := m.chat.ChooseGroup(st.on, r.group)
			if !ok {
				r.fail(r.next, fmt.Errorf("%s's conversations do not list #%s", m.chat.Pane(st.on).Self, r.group))
				return nil
			}
			cmds = append(cmds, cmd)
		} else {
			cmds = append(cmds, m.chat.ChoosePeer(st.on, m.chat.Pane(1-st.on).Self))
		}
	}
	// The step's keys are its own: what is in the composer (a draft, a
	// space typed after the last scenario's end) is set aside while they
	// and the step's action type, and given back after, never sent with
	// them.
	draft := m.chat.Draft(st.on)
	m.chat.SetDraft(st.on, "")
	cmds = append(cmds, m.typeOn(st.on, st.keys))
	if st.do != nil {
		cmds = append(cmds, st.do(m))
	}
	m.chat.SetDraft(st.on, draft)
	if st.done != nil {
		r.checking = true
		cmds = append(cmds, m.checkCmd(r, r.next-1))
	}
	return tea.Batch(cmds...)
}

// checked takes a step's check: the scenario goes on, or stops and says
// what did not happen.
func (m *Model) checked(msg checkMsg) tea.Cmd {
	r := m.scen
	if r == nil || r.serial != msg.serial || msg.step != r.next-1 || !r.checking {
		return nil
	}
	r.checking = false
	for k, v := range msg.found {
		r.marks[k] = v
	}
	if msg.err != nil {
		r.fail(msg.step+1, msg.err)
		m.chat.Note(m.chat.Active(), eventlog.Entry{Name: "demo_scenario_failed", Level: eventlog.Error,
			Text: fmt.Sprintf("scenario %d (%s): %s", r.n, r.s.name, r.failed)})
		return nil
	}
	return m.playQueued()
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

// narrate is a step's narration for this run: the group by its name.
func (r *scenarioRun) narrate(say string) string {
	if r.group == "" || r.group == "trio" {
		return say
	}
	return strings.ReplaceAll(say, "#trio", "#"+r.group)
}

// scenarioHint is the hint line while a scenario plays.
func (m Model) scenarioHint() string {
	r := m.scen
	if r.next == 0 {
		if r.failed != "" {
			return fmt.Sprintf("[%d %s] ✗ %s · space or esc: stop", r.n, r.s.name, r.failed)
		}
		return fmt.Sprintf("[%d %s] Setting the stage: both profiles open and plugged in, nothing held or armed, each writing to the other… esc: stop", r.n, r.s.name)
	}
	head := fmt.Sprintf("[%d %s · %d/%d] ", r.n, r.s.name, r.next, len(r.s.steps))
	if r.failed != "" {
		return head + "✗ " + r.failed + fmt.Sprintf(" · space or esc: stop (ctrl+x %d plays it again)", r.n)
	}
	st := r.s.steps[r.next-1]
	more := "space: next step"
	switch {
	case r.checking:
		more = "checking that it happened…"
	case r.next >= len(r.s.steps):
		more = "space: end"
	}
	return head + r.narrate(st.say) + " · " + more + ", esc: stop"
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
