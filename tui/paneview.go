// The pane's layout, its status bar and how it draws its panels.

package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
)

// paneLayout is where each panel goes. A compact pane (a small terminal)
// shows the conversations, the timeline and the composer; the inbox,
// outbox and events take the conversation's place while one of them has
// the focus (tab, or alt+4, alt+5, alt+6).
type paneLayout struct {
	statusH, topH, compH, listH, evH int
	xferH                            int // the transfer strip, over the composer
	convW, tlW, inW, outW            int
	compact                          bool
}

// roomyTimeline is the fewest timeline lines the full layout must leave;
// below it the pane goes compact.
const roomyTimeline = 8

// chatTimeline is the same for a chat-first pane (PaneOptions.ChatFirst,
// parley tui): the full layout gives the timeline four tenths of the
// height, so a terminal needs about 46 rows (160x48 shows every panel)
// before the inbox, outbox and events share the screen; below that they
// are a key away.
const chatTimeline = 15

// SetSize lays the pane out in w×h; the command reads again the lists
// whose page size changed.
func (p *pane) SetSize(w, h int) tea.Cmd {
	p.w, p.h = w, h
	return p.layout()
}

func (p *pane) layout() tea.Cmd {
	w, h := p.w, p.h
	var l paneLayout
	l.statusH = 2
	if _, _, ok := p.changedHere(); ok {
		l.statusH = 4
	}
	if p.history != nil {
		l.statusH++ // the history import's line
	}
	rest := max(h-l.statusH, 0)
	// The composer grows with what it holds, up to a third of the room.
	l.compH = 1 + min(p.comp().Lines(), max(rest/3-1, 1))
	if rest < 12 {
		l.compH = 2
	}
	rest = max(rest-l.compH, 0)
	l.xferH = min(p.xfer.Lines(), rest/4)
	rest -= l.xferH
	l.topH = rest * 4 / 10
	l.compact = l.topH-1 < roomyTimeline || p.hooks.ChatFirst && l.topH-1 < chatTimeline
	l.convW = layout.Clamp(w/4, 14, 28)
	l.tlW = max(w-l.convW-1, 0)
	if l.compact {
		l.topH, l.listH, l.evH = rest, rest, rest
		l.inW, l.outW = w, w
	} else {
		l.listH = rest * 3 / 10
		l.evH = rest - l.topH - l.listH
		l.inW = max((w-1)/2, 0)
		l.outW = max(w-l.inW-1, 0)
	}
	if l == p.lay {
		return nil
	}
	p.lay = l
	sizes := [panelCount][2]int{
		panelConversations: {l.convW, l.topH},
		panelTimeline:      {l.tlW, l.topH},
		panelComposer:      {w, l.compH},
		panelInbox:         {l.inW, l.listH},
		panelOutbox:        {l.outW, l.listH},
		panelEvents:        {w, l.evH},
		panelRequests:      {w, l.topH},
		panelDevices:       {w, l.topH},
	}
	var cmds [panelCount]tea.Cmd
	for i, pn := range p.panels {
		cmds[i] = pn.SetSize(sizes[i][0], sizes[i][1])
	}
	return tea.Batch(cmds[:]...)
}

// View draws the pane in exactly its size.
func (p pane) View() string {
	if p.w <= 0 || p.h <= 0 {
		return ""
	}
	l := p.lay
	sep := func(h int) string {
		return p.th.App.Separator.Render(strings.TrimSuffix(strings.Repeat("│\n", h), "\n"))
	}
	parts := []string{
		p.statusView(),
		layout.Beside(p.conv().View(), sep(l.topH), p.tl().View()),
		p.xfer.View(p.w, l.xferH),
		p.comp().View(),
		layout.Beside(p.in().View(), sep(l.listH), p.out().View()),
		p.ev().View(),
	}
	switch p.focus {
	case panelRequests, panelDevices:
		parts[1] = p.panels[p.focus].View()
	}
	if l.compact {
		top := parts[1]
		switch p.focus {
		case panelInbox, panelOutbox, panelEvents:
			top = p.panels[p.focus].View()
		}
		parts = []string{p.statusView(), top, p.xfer.View(p.w, l.xferH), p.comp().View()}
	}
	out := make([]string, 0, len(parts))
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return layout.Clip(strings.Join(out, "\n"), p.w, p.h)
}

func (p pane) statusView() string {
	st := p.th.Status
	addr, mark := st.Address, "  "
	if p.active {
		addr, mark = st.AddressActive, "▶ "
	}
	line := addr.Render(mark + p.self.String() + " ")
	seg := func(s string, style lipgloss.Style) { line += st.Bar.Render(" │ ") + style.Render(s) }
	switch {
	case p.closed != "":
		text := strings.ToUpper(p.closed)
		if p.hooks.ClosedHint != "" {
			text += ": " + p.hooks.ClosedHint
		}
		seg(text, st.Offline)
	case p.att != nil:
		state := p.connState
		style := st.Offline
		switch state {
		case "connected":
			style = st.Connected
		case "connecting", "reconnecting":
			style = st.Connecting
		}
		seg("relay "+state, style)
	}
	// Switches that are off take little room; what is armed or on says so.
	commit := st.Flag.Render(p.policy.Commit.String())
	if p.policy.Commit != engine.CommitManual {
		commit = st.FlagOn.Render(p.policy.Commit.String())
	}
	auto := st.Bar.Render("commit:") + commit + st.Bar.Render(" retry:") + onOffStyle(st, p.policy.AutoRetry)
	line += st.Bar.Render(" │ ") + auto
	for _, f := range p.flags {
		seg(f, st.FlagOn)
	}
	if n := p.requestCount(); n != "" {
		seg(n, st.FlagOn)
	}
	if p.lay.compact {
		// The panels a small terminal hides, with what they hold.
		style := st.Flag
		if p.in().Total()+p.out().Total() > 0 {
			style = st.FlagOn
		}
		seg(fmt.Sprintf("in %d · out %d (alt+4/5)", p.in().Total(), p.out().Total()), style)
	}
	lines := []string{layout.Pad(st.Bar, line, p.w)}
	if p.history != nil {
		lines = append(lines, layout.Pad(st.Warning, " "+layout.OneLine([]byte(p.historyLine()), max(p.w-2, 1)), p.w))
	}
	if dev, ch, ok := p.changedHere(); ok {
		num := ch.number
		if num == "" {
			num = "reading it from the relay…"
			if ch.err != "" {
				num = ch.err
			}
		}
		// The number in two rows of six groups, as people read it out.
		first, second := num, ""
		if g := strings.Fields(num); len(g) == 12 {
			first, second = strings.Join(g[:6], " "), strings.Join(g[6:], " ")
		}
		lines = append(lines,
			layout.Line(st.Warning.Render(fmt.Sprintf(" ⚠ identity changed: %s · sending blocked · ", dev))+
				st.WarningKey.Render("ctrl+t")+st.Warning.Render(" accepts"), p.w),
			layout.Line(" new safety "+st.Safety.Render(first), p.w),
			layout.Line("            "+st.Safety.Render(second)+" · then ctrl+r retries", p.w))
	} else if p.notice != "" {
		lines = append(lines, layout.Pad(st.Warning, " "+layout.OneLine([]byte(p.notice), max(p.w-2, 1)), p.w))
	} else {
		text := " safety —"
		switch {
		case p.peer.IsZero():
		case p.safety != "" && p.safeBasis == engine.SafetyAccounts:
			text = " safety " + p.safety + " · accounts"
		case p.safety != "":
			text = " safety " + p.safety
		default:
			text = " safety: none yet with " + p.peer.String() + " (pinned at the first message)"
		}
		lines = append(lines, layout.Pad(st.Safety, text, p.w))
	}
	return strings.Join(lines, "\n")
}

func onOffStyle(st themes.StatusStyles, on bool) string {
	if on {
		return st.FlagOn.Render("on")
	}
	return st.Flag.Render("off")
}
