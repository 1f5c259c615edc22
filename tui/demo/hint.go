package demo

import (
	"fmt"

	"github.com/parley-chat/parley/tui"
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
	n := m.chat.Panes()
	panes := make([]tui.PaneState, n)
	for i := range panes {
		panes[i] = m.chat.Pane(i)
	}
	for i, p := range panes {
		if p.Closed != "" {
			return fmt.Sprintf("%s is %s: ctrl+x o reopens it and its lists are read again (state_resync_required when it crashed mid-way)", p.Self, p.Closed)
		}
		if p.IdentityChanged {
			return fmt.Sprintf("%s meets %s's new identity: compare the safety number, ctrl+t accepts it, then ctrl+r resends what is pending", p.Self, p.Peer)
		}
		if m.flags[i].held {
			held++
		}
	}
	switch {
	case held == n && held > 1:
		return "Delivery is held to both: write on each side (ctrl+o switches), then ctrl+x H releases both: a session collision"
	case held > 0:
		return "Delivery is held to one profile: its envelopes wait at the relay until ctrl+x h on it releases them"
	}
	for _, p := range panes {
		if n := p.Inbound; n > 0 {
			return fmt.Sprintf("%s has %d pending received: ctrl+o switches to it, alt+4 opens its inbox, c commits (ctrl+x a first loses the ACK)", p.Self, n)
		}
	}
	for _, p := range panes {
		if n := p.Outbound; n > 0 {
			return fmt.Sprintf("%s has %d pending sent, not acknowledged: ctrl+r retries (the peer dedups), ctrl+x r retries with backoff", p.Self, n)
		}
	}
	if n > 1 && panes[0].Shown == 0 && panes[1].Shown == 0 {
		return fmt.Sprintf("Type a message and press Enter: it goes to %s and waits in its inbox · ctrl+x 1…6 plays a guided scenario · f1 help", panes[0].Peer)
	}
	return "All settled. A guided scenario: ctrl+x then " + scenarioMenu()
}
