package themes

import "github.com/charmbracelet/lipgloss"

// palette is the handful of colours a theme is made of; build turns it into
// styles, so that the three themes differ in colour only.
type palette struct {
	fg, muted, faint lipgloss.TerminalColor
	accent, accentFg lipgloss.TerminalColor // focus: title bars, cursor rows
	selBg            lipgloss.TerminalColor // selection without focus
	good, warn, bad  lipgloss.TerminalColor
	info, peer, own  lipgloss.TerminalColor
	barBg, barFg     lipgloss.TerminalColor
	hintBg, hintFg   lipgloss.TerminalColor
	bold             bool // high contrast: states are bold as well
}

var palettes = map[string]palette{
	Dark: {
		fg: lipgloss.Color("252"), muted: lipgloss.Color("245"), faint: lipgloss.Color("240"),
		accent: lipgloss.Color("63"), accentFg: lipgloss.Color("231"), selBg: lipgloss.Color("237"),
		good: lipgloss.Color("78"), warn: lipgloss.Color("214"), bad: lipgloss.Color("203"),
		info: lipgloss.Color("111"), peer: lipgloss.Color("177"), own: lipgloss.Color("117"),
		barBg: lipgloss.Color("236"), barFg: lipgloss.Color("252"),
		hintBg: lipgloss.Color("60"), hintFg: lipgloss.Color("231"),
	},
	Light: {
		fg: lipgloss.Color("235"), muted: lipgloss.Color("242"), faint: lipgloss.Color("248"),
		accent: lipgloss.Color("25"), accentFg: lipgloss.Color("231"), selBg: lipgloss.Color("253"),
		good: lipgloss.Color("28"), warn: lipgloss.Color("130"), bad: lipgloss.Color("160"),
		info: lipgloss.Color("25"), peer: lipgloss.Color("90"), own: lipgloss.Color("24"),
		barBg: lipgloss.Color("254"), barFg: lipgloss.Color("235"),
		hintBg: lipgloss.Color("189"), hintFg: lipgloss.Color("17"),
	},
	HighContrast: {
		fg: lipgloss.Color("15"), muted: lipgloss.Color("15"), faint: lipgloss.Color("7"),
		accent: lipgloss.Color("11"), accentFg: lipgloss.Color("0"), selBg: lipgloss.Color("8"),
		good: lipgloss.Color("10"), warn: lipgloss.Color("11"), bad: lipgloss.Color("9"),
		info: lipgloss.Color("14"), peer: lipgloss.Color("13"), own: lipgloss.Color("14"),
		barBg: lipgloss.Color("0"), barFg: lipgloss.Color("15"),
		hintBg: lipgloss.Color("15"), hintFg: lipgloss.Color("0"),
		bold: true,
	},
}

// monoPalette has no colours at all (NO_COLOR).
var monoPalette = palette{
	fg: lipgloss.NoColor{}, muted: lipgloss.NoColor{}, faint: lipgloss.NoColor{},
	accent: lipgloss.NoColor{}, accentFg: lipgloss.NoColor{}, selBg: lipgloss.NoColor{},
	good: lipgloss.NoColor{}, warn: lipgloss.NoColor{}, bad: lipgloss.NoColor{},
	info: lipgloss.NoColor{}, peer: lipgloss.NoColor{}, own: lipgloss.NoColor{},
	barBg: lipgloss.NoColor{}, barFg: lipgloss.NoColor{},
	hintBg: lipgloss.NoColor{}, hintFg: lipgloss.NoColor{},
}

func build(p palette) Theme {
	s := func() lipgloss.Style { return lipgloss.NewStyle() }
	fg := s().Foreground(p.fg)
	muted := s().Foreground(p.muted)
	faint := s().Foreground(p.faint)
	state := func(c lipgloss.TerminalColor) lipgloss.Style { return s().Foreground(c).Bold(p.bold) }
	// Focus must survive NO_COLOR: reverse video carries it there.
	focus := s().Foreground(p.accentFg).Background(p.accent).Bold(true)
	cursorRow := s().Foreground(p.accentFg).Background(p.accent)
	selected := s().Background(p.selBg).Bold(true)
	if _, mono := p.accent.(lipgloss.NoColor); mono {
		focus = s().Reverse(true).Bold(true)
		cursorRow = s().Reverse(true)
		selected = s().Bold(true).Underline(true)
	}
	list := ListStyles{
		Row: fg, Selected: cursorRow, Peer: s().Foreground(p.peer), ID: faint, Time: muted,
		State: state(p.info), Warn: state(p.bad), Confirm: state(p.warn).Bold(true), Page: muted,
	}
	return Theme{
		App: AppStyles{
			Hint: s().Foreground(p.hintFg).Background(p.hintBg), HintKey: s().Foreground(p.hintFg).Background(p.hintBg).Bold(true),
			Separator: faint, Prefix: state(p.warn).Bold(true), Crashed: state(p.bad).Bold(true),
		},
		Panel: PanelStyles{
			Title: s().Foreground(p.muted).Bold(true), TitleFocused: focus,
			Count: muted, Empty: faint.Italic(true), Error: state(p.bad),
		},
		Status: StatusStyles{
			Bar: s().Foreground(p.barFg).Background(p.barBg), Address: s().Foreground(p.barFg).Background(p.barBg).Bold(true),
			AddressActive: focus,
			Connected:     s().Foreground(p.good).Background(p.barBg).Bold(p.bold),
			Connecting:    s().Foreground(p.warn).Background(p.barBg).Bold(p.bold),
			Offline:       s().Foreground(p.bad).Background(p.barBg).Bold(true),
			Flag:          s().Foreground(p.muted).Background(p.barBg),
			FlagOn:        s().Foreground(p.warn).Background(p.barBg).Bold(true),
			Safety:        s().Foreground(p.barFg).Background(p.barBg),
			Warning:       state(p.bad).Bold(true),
			WarningKey:    state(p.warn).Bold(true).Underline(true),
		},
		Conversations: ConversationStyles{
			Item: fg, Selected: selected, Cursor: cursorRow, Counts: muted, Unread: state(p.good).Bold(true),
			Changed: state(p.bad).Bold(true), Input: s().Foreground(p.own),
		},
		Timeline: TimelineStyles{
			Time: muted, Own: s().Foreground(p.own).Bold(true), Peer: s().Foreground(p.peer).Bold(true), Body: fg,
			Pending: state(p.warn), Accepted: state(p.info), Acked: state(p.good), NotSent: state(p.bad).Bold(true),
			Dropped: faint.Strikethrough(true), Received: state(p.good), Waiting: state(p.warn).Bold(true), More: faint.Italic(true),
			Match: s().Underline(true), Current: s().Reverse(true),
		},
		Composer: ComposerStyles{
			Text: fg, Placeholder: faint, Prompt: s().Foreground(p.own), Cursor: s().Reverse(true),
			Counter: muted, Error: state(p.bad), Blocked: state(p.bad).Bold(true),
		},
		Inbox:    list,
		Outbox:   list,
		Requests: list,
		Devices:  list,
		Events: EventStyles{
			Time: muted, Info: s().Foreground(p.info), Good: state(p.good), Warn: state(p.warn), Error: state(p.bad).Bold(true),
			Demo: s().Foreground(p.peer).Italic(true), Marked: cursorRow,
		},
		Help: HelpStyles{Key: s().Foreground(p.fg).Bold(true), Desc: muted, Separator: faint, Ellipsis: faint},
	}
}
