package tui

import (
	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/inbox"
	"github.com/parley-chat/parley/tui/outbox"
)

// panelID names a profile's panels, in tab order: their place in a pane's
// array of panels.
type panelID int

const (
	panelConversations panelID = iota
	panelTimeline
	panelComposer
	panelInbox
	panelOutbox
	panelEvents
	panelRequests // requestpane.go
	panelDevices  // devicepane.go
	panelCount
)

func (p panelID) String() string {
	return [...]string{"conversations", "timeline", "composer", "inbox", "outbox", "events", "requests", "devices"}[p]
}

// panel is what a pane does with every one of its panels alike: route a
// message, draw, size, focus, and gather the keys for the help. A pane holds
// them in an array indexed by panelID; what only one panel does (select a
// conversation, add an event) goes through the typed accessors below.
type panel interface {
	// Update handles a message and returns the panel.
	Update(msg tea.Msg) (panel, tea.Cmd)
	// View draws the panel in exactly its size.
	View() string
	// SetSize gives the panel its size; the command reads again what a
	// new page size needs.
	SetSize(w, h int) tea.Cmd
	// Focus gives the panel the keyboard.
	Focus() tea.Cmd
	// Blur takes the keyboard away.
	Blur()
	// KeyMap is the panel's keys, for the help.
	KeyMap() help.KeyMap
}

// Each panel package's Model, as a panel: the adapters give every Model
// the same method set (a concrete Update becomes the panel's; SetSize and
// Focus return a command whether or not the panel has one).
type (
	convPanel     struct{ conversations.Model }
	composerPanel struct{ composer.Model }
	inboxPanel    struct{ inbox.Model }
	outboxPanel   struct{ outbox.Model }
	eventsPanel   struct{ eventlog.Model }
)

var (
	_ panel = (*convPanel)(nil)
	_ panel = (*timelinePanel)(nil)
	_ panel = (*composerPanel)(nil)
	_ panel = (*inboxPanel)(nil)
	_ panel = (*outboxPanel)(nil)
	_ panel = (*eventsPanel)(nil)
	_ panel = (*requestsPanel)(nil)
	_ panel = (*devicesPanel)(nil)
)

func (c *convPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	var cmd tea.Cmd
	c.Model, cmd = c.Model.Update(msg)
	return c, cmd
}
func (c *convPanel) SetSize(w, h int) tea.Cmd { c.Model.SetSize(w, h); return nil }
func (c *convPanel) Focus() tea.Cmd           { c.Model.Focus(); return nil }
func (c *convPanel) KeyMap() help.KeyMap      { return c.Model.KeyMap() }

func (c *composerPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	var cmd tea.Cmd
	c.Model, cmd = c.Model.Update(msg)
	return c, cmd
}
func (c *composerPanel) SetSize(w, h int) tea.Cmd { c.Model.SetSize(w, h); return nil }
func (c *composerPanel) KeyMap() help.KeyMap      { return c.Model.KeyMap() }

func (i *inboxPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	var cmd tea.Cmd
	i.Model, cmd = i.Model.Update(msg)
	return i, cmd
}
func (i *inboxPanel) Focus() tea.Cmd      { i.Model.Focus(); return nil }
func (i *inboxPanel) KeyMap() help.KeyMap { return i.Model.KeyMap() }

func (o *outboxPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	var cmd tea.Cmd
	o.Model, cmd = o.Model.Update(msg)
	return o, cmd
}
func (o *outboxPanel) Focus() tea.Cmd      { o.Model.Focus(); return nil }
func (o *outboxPanel) KeyMap() help.KeyMap { return o.Model.KeyMap() }

func (e *eventsPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	var cmd tea.Cmd
	e.Model, cmd = e.Model.Update(msg)
	return e, cmd
}
func (e *eventsPanel) SetSize(w, h int) tea.Cmd { e.Model.SetSize(w, h); return nil }
func (e *eventsPanel) Focus() tea.Cmd           { e.Model.Focus(); return nil }
func (e *eventsPanel) KeyMap() help.KeyMap      { return e.Model.KeyMap() }

// The panels by their type, for what only one of them does.
func (p *pane) conv() *convPanel     { return p.panels[panelConversations].(*convPanel) }
func (p *pane) tl() *timelinePanel   { return p.panels[panelTimeline].(*timelinePanel) }
func (p *pane) comp() *composerPanel { return p.panels[panelComposer].(*composerPanel) }
func (p *pane) in() *inboxPanel      { return p.panels[panelInbox].(*inboxPanel) }
func (p *pane) out() *outboxPanel    { return p.panels[panelOutbox].(*outboxPanel) }
func (p *pane) ev() *eventsPanel     { return p.panels[panelEvents].(*eventsPanel) }
