// Package themes holds parley's colour themes: one Theme per look, with a
// style group per component of the terminal UI. Every colour the UI draws
// comes from here; tui/ defines no styles of its own.
//
// themes imports lipgloss and nothing of parley: it must not import engine,
// store, transport or tui.
package themes

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Theme names.
const (
	Dark         = "dark"
	Light        = "light"
	HighContrast = "high-contrast"
	// Default is the theme Get gives for "" (the interface asks the
	// terminal first: ForBackground).
	Default = Dark
)

// Theme is a complete look: one style group per component. A Theme is a
// value; the UI keeps its own copy and nothing changes it after Get.
type Theme struct {
	// Name is the theme's name as chosen with --theme.
	Name string
	// Mono is true when colours are off (NO_COLOR): focus and states are
	// then told apart by bold, underline and reverse only.
	Mono bool

	App           AppStyles
	Panel         PanelStyles
	Status        StatusStyles
	Conversations ConversationStyles
	Timeline      TimelineStyles
	Composer      ComposerStyles
	Inbox         ListStyles
	Outbox        ListStyles
	Requests      ListStyles // message requests from devices not accepted
	Devices       ListStyles // the devices of this person's account
	Events        EventStyles
	Help          HelpStyles
}

// AppStyles are the frame around the panes.
type AppStyles struct {
	Hint      lipgloss.Style // the demo's one-line "try next" hint
	HintKey   lipgloss.Style // a key named inside the hint
	Separator lipgloss.Style // the line between two profiles
	Prefix    lipgloss.Style // shown while a key prefix waits for its second key
	Crashed   lipgloss.Style // a profile that is closed (crashed) in the demo
}

// PanelStyles are the titles shared by every panel.
type PanelStyles struct {
	Title        lipgloss.Style // a panel's title line, unfocused
	TitleFocused lipgloss.Style // the focused panel's title line
	Count        lipgloss.Style // a count inside a title
	Empty        lipgloss.Style // "nothing pending" and similar
	Error        lipgloss.Style // a panel's own error line
}

// StatusStyles are the status bar of a profile.
type StatusStyles struct {
	Bar           lipgloss.Style
	Address       lipgloss.Style // own address, unfocused profile
	AddressActive lipgloss.Style // own address, focused profile
	Connected     lipgloss.Style
	Connecting    lipgloss.Style
	Offline       lipgloss.Style
	Flag          lipgloss.Style // a switch that is off
	FlagOn        lipgloss.Style // a switch that is on (hold, auto-commit...)
	Safety        lipgloss.Style // the safety number
	Warning       lipgloss.Style // identity change banner
	WarningKey    lipgloss.Style // the action key inside the banner
}

// ConversationStyles are the conversations list.
type ConversationStyles struct {
	Item     lipgloss.Style
	Selected lipgloss.Style
	Cursor   lipgloss.Style // the selected item while the panel has focus
	Counts   lipgloss.Style
	Unread   lipgloss.Style
	Changed  lipgloss.Style // a peer whose identity changed
	Input    lipgloss.Style // the address prompt
}

// TimelineStyles are one conversation's messages.
type TimelineStyles struct {
	Time     lipgloss.Style
	Own      lipgloss.Style // the "you" label
	Peer     lipgloss.Style // the peer label
	Body     lipgloss.Style
	Pending  lipgloss.Style // stored, not yet accepted by the relay
	Accepted lipgloss.Style // relay accepted, not yet acknowledged
	Acked    lipgloss.Style
	NotSent  lipgloss.Style // hand-off failed
	Dropped  lipgloss.Style // abandoned
	Received lipgloss.Style // a committed received message
	Waiting  lipgloss.Style // a received message not committed yet
	More     lipgloss.Style // "older messages above"
	Match    lipgloss.Style // a search match
	Current  lipgloss.Style // the search match in view
}

// ComposerStyles are the message editor.
type ComposerStyles struct {
	Text        lipgloss.Style
	Placeholder lipgloss.Style
	Prompt      lipgloss.Style
	Cursor      lipgloss.Style
	Counter     lipgloss.Style // body size against the limit
	Error       lipgloss.Style
	Blocked     lipgloss.Style // sending to the peer is blocked
}

// ListStyles are the pending inbound and outbound lists.
type ListStyles struct {
	Row      lipgloss.Style
	Selected lipgloss.Style // the cursor row while the panel has focus
	Peer     lipgloss.Style
	ID       lipgloss.Style
	Time     lipgloss.Style
	State    lipgloss.Style
	Warn     lipgloss.Style // not sent
	Confirm  lipgloss.Style // "discard all 3? y/n"
	Page     lipgloss.Style // page position
}

// EventStyles are the event log.
type EventStyles struct {
	Time  lipgloss.Style
	Info  lipgloss.Style // neutral: relay accepted, finalized
	Good  lipgloss.Style // delivery, acknowledgement cleared
	Warn  lipgloss.Style // repeats, ACK not sent, not sent, demo actions
	Error lipgloss.Style // errors by name
	Demo  lipgloss.Style // what a demo control did
	// Marked is the entry that enter opens, while the log has the focus.
	Marked lipgloss.Style
}

// HelpStyles are the help line (mapped onto bubbles/help).
type HelpStyles struct {
	Key       lipgloss.Style
	Desc      lipgloss.Style
	Separator lipgloss.Style
	Ellipsis  lipgloss.Style
}

// ForBackground is the theme that reads on a terminal's background when
// none is named: Dark on a dark background, Light on a light one (the
// dark theme's pale greys do not read on white).
func ForBackground(dark bool) string {
	if dark {
		return Dark
	}
	return Light
}

// Names returns the theme names, sorted.
func Names() []string {
	n := make([]string, 0, len(palettes))
	for k := range palettes {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Get returns the named theme ("" is the default). When the NO_COLOR
// environment variable is set to anything but the empty string, the theme
// comes without colours (https://no-color.org).
func Get(name string) (Theme, error) {
	return get(name, os.Getenv("NO_COLOR") != "")
}

// GetColor returns the named theme with or without colours, ignoring the
// environment; tests and callers that decided already use it.
func GetColor(name string, color bool) (Theme, error) {
	return get(name, !color)
}

func get(name string, mono bool) (Theme, error) {
	if name == "" {
		name = Default
	}
	p, ok := palettes[strings.ToLower(name)]
	if !ok {
		return Theme{}, fmt.Errorf("unknown theme %q (have %s)", name, strings.Join(Names(), ", "))
	}
	if mono {
		p = monoPalette
	}
	t := build(p)
	t.Name = strings.ToLower(name)
	t.Mono = mono
	return t, nil
}

// MustGet is Get for names known to exist; it panics on an unknown name.
func MustGet(name string) Theme {
	t, err := Get(name)
	if err != nil {
		panic(err)
	}
	return t
}
