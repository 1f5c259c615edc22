package demo

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui"
)

// maxHintLines is the most lines the hint takes; a narration longer than
// that at a narrow width is cut at the end of the last one.
const maxHintLines = 4

// compactBelow is the window height under which the hint and the
// exactly-once line take one line each, the rest shown with the full help
// (f1): at 80x24 the four lines they could take left each conversation
// three rows.
const compactBelow = 30

// compact reports whether the header keeps to one line each.
func (m Model) compact() bool { return m.h < compactBelow && !m.chat.FullHelp() }

// oneLine is text on one line of the window: whole when it fits, else cut
// with a word that says where the rest is.
func oneLine(text string, w int) string {
	const more = "… (f1: all)"
	if layout.Width(text) <= w || w <= layout.Width(more)+8 {
		return text
	}
	return ansi.Truncate(text, w-layout.Width(more), "") + more
}

// hintView is the demo's line saying what to try next, from what the panes
// show now, wrapped to the width: a scenario's narration is never cut
// before its point.
func (m Model) hintView() []string {
	text := m.hint()
	style := m.th.App.Hint
	if m.scen != nil && m.scen.failed != "" {
		style = m.th.Panel.Error // a step did not happen: said, not narrated past
	}
	if m.w < 8 {
		return []string{layout.Pad(style, " "+text, m.w)}
	}
	wrapped := layout.Wrap(text, m.w-1)
	switch {
	case m.compact():
		// One line; a scenario's narration, its point, two.
		n := 1
		if m.scen != nil {
			n = 2
		}
		if len(wrapped) > n {
			wrapped = append(wrapped[:n-1], oneLine(strings.Join(wrapped[n-1:], " "), m.w-1))
		}
	case len(wrapped) > maxHintLines:
		wrapped = append(wrapped[:maxHintLines-1], strings.Join(wrapped[maxHintLines-1:], " "))
	}
	lines := make([]string, len(wrapped))
	for i, l := range wrapped {
		lines[i] = layout.Pad(style, " "+strings.TrimRight(l, " "), m.w)
	}
	return lines
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
		return fmt.Sprintf("Type a message and press Enter: it goes to %s and waits in its inbox · ctrl+x 1…%d plays a guided scenario · f1 help", panes[0].Peer, len(scenarios()))
	}
	return "All settled. A guided scenario: ctrl+x then " + scenarioMenu()
}
