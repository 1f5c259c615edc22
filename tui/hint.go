package tui

import (
	"fmt"

	"github.com/parley-chat/parley/tui/internal/layout"
)

// hintView is the demo's one line saying what to try next, from what the
// panes show now.
func (m Model) hintView() string {
	return layout.Pad(m.th.App.Hint, " "+m.hint(), m.w)
}

func (m Model) hint() string {
	if m.scen != nil {
		return m.scenarioHint()
	}
	held := 0
	for _, p := range m.panes {
		if p.closed != "" {
			return fmt.Sprintf("%s is %s: ctrl+x o reopens it and its lists are read again (state_resync_required when it crashed mid-way)", p.self, p.closed)
		}
		if p.changed[p.peer] != nil {
			return fmt.Sprintf("%s meets %s's new identity: compare the safety number, ctrl+t accepts it, then ctrl+r resends what is pending", p.self, p.peer)
		}
		if p.flags.held {
			held++
		}
	}
	switch {
	case held == len(m.panes) && held > 1:
		return "Delivery is held to both: write on each side (ctrl+o switches), then ctrl+x H releases both: a session collision"
	case held > 0:
		return "Delivery is held to one profile: its envelopes wait at the relay until ctrl+x h on it releases them"
	}
	for _, p := range m.panes {
		if n := p.in.Total(); n > 0 {
			return fmt.Sprintf("%s has %d pending received: ctrl+o switches to it, alt+4 opens its inbox, c commits (ctrl+x a first loses the ACK)", p.self, n)
		}
	}
	for _, p := range m.panes {
		if n := p.out.Total(); n > 0 {
			return fmt.Sprintf("%s has %d pending sent, not acknowledged: ctrl+r retries (the peer dedups), ctrl+x r retries with backoff", p.self, n)
		}
	}
	if len(m.panes) > 1 && len(m.panes[0].tl.Entries()) == 0 && len(m.panes[1].tl.Entries()) == 0 {
		return fmt.Sprintf("Type a message and press Enter: it goes to %s and waits in its inbox · ctrl+x 1…6 plays a guided scenario · f1 help", m.panes[0].peer)
	}
	return "All settled. A guided scenario: ctrl+x then " + scenarioMenu()
}
