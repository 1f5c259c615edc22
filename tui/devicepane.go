// The pane's devices panel: the devices of this person's account, and,
// from the device holding the account key, the removal of one and the
// linking of a new one by its code.

package tui

import (
	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/devices"
	"github.com/parley-chat/parley/tui/eventlog"
)

// DeviceLinking is how the devices panel reaches a new device's
// provisioning mailbox, which the chat does not reach itself.
type DeviceLinking = devices.Linking

// LinkMailbox is a new device's provisioning mailbox, joined.
type LinkMailbox = devices.Mailbox

// devicesPanel is the devices panel as a panel. Like the requests panel,
// it takes the place of the conversation and the timeline while it has
// the focus (alt+8).
type devicesPanel struct{ devices.Model }

func (d *devicesPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	var cmd tea.Cmd
	d.Model, cmd = d.Model.Update(msg)
	return d, cmd
}
func (d *devicesPanel) SetSize(w, h int) tea.Cmd { d.Model.SetSize(w, h); return nil }
func (d *devicesPanel) Focus() tea.Cmd           { return d.Model.Focus() }
func (d *devicesPanel) KeyMap() help.KeyMap      { return d.Model.KeyMap() }

func (p *pane) dev() *devicesPanel { return p.panels[panelDevices].(*devicesPanel) }

// attachDevices points the panel at the client when it keeps an account
// (an engine client does; a test's fake may not) and reads it.
func (p *pane) attachDevices(c PaneSource) tea.Cmd {
	ds, _ := c.(devices.Source)
	p.dev().SetSource(ds)
	p.dev().SetLinkHint(p.hooks.LinkCommand)
	p.dev().SetLinking(p.hooks.LinkDevice)
	return p.dev().Reload()
}

// deviceRemoved logs what a removal did.
func (p *pane) deviceRemoved(r devices.RemovedMsg) {
	e := eventlog.Entry{Name: "device_removed", Text: devices.DescribeRemoval(r), Level: eventlog.Warn}
	if r.Err != nil {
		e.Name, e.Level = engine.ErrorName(r.Err), eventlog.Error
	}
	p.note(e)
}

// deviceLinked logs what a link confirmed here did.
func (p *pane) deviceLinked(l devices.LinkedMsg) {
	e := eventlog.Entry{Name: "device_linked", Text: devices.DescribeLink(l), Level: eventlog.Warn}
	if l.Err != nil {
		e.Name, e.Level = engine.ErrorName(l.Err), eventlog.Error
	}
	p.note(e)
}
