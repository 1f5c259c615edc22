// The pane's message requests: the panel that lists them, the status bar's
// count and what an accept, a reject or a block changes elsewhere.

package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/requests"
)

// requestsPanel is the requests panel as a panel. It takes the place of the
// conversation and the timeline while it has the focus (alt+7), at every
// size: a request is a decision, not a conversation.
type requestsPanel struct{ requests.Model }

func (r *requestsPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	var cmd tea.Cmd
	r.Model, cmd = r.Model.Update(msg)
	return r, cmd
}
func (r *requestsPanel) SetSize(w, h int) tea.Cmd { r.Model.SetSize(w, h); return nil }
func (r *requestsPanel) Focus() tea.Cmd           { r.Model.Focus(); return nil }
func (r *requestsPanel) KeyMap() help.KeyMap      { return r.Model.KeyMap() }

func (p *pane) req() *requestsPanel { return p.panels[panelRequests].(*requestsPanel) }

// attachRequests points the panel at the client when it keeps requests (an
// engine client does; a test's fake may not) and reads them.
func (p *pane) attachRequests(c PaneSource) tea.Cmd {
	rs, _ := c.(requests.Source)
	p.req().SetSource(rs)
	return p.req().Reload()
}

// requestAccepted reads again what an accepted request changed: its
// messages are now pending deliveries, in the conversation and the inbox.
func (p *pane) requestAccepted(engine.Event) tea.Cmd {
	return tea.Batch(p.conv().Reload(), p.tl().Reload(), p.in().Reload())
}

// requestDone logs what an accept, a reject or a block did; the lists are
// read again (an accept also through its event).
func (p *pane) requestDone(d requests.DoneMsg) tea.Cmd {
	lvl, name := eventlog.Info, "request_"+string(d.Op)
	switch d.Op {
	case requests.OpAccept:
		name, lvl = "request_accepted", eventlog.Good
	case requests.OpReject:
		name = "request_rejected"
	case requests.OpBlock:
		name, lvl = "request_blocked", eventlog.Warn
	}
	if d.Err != nil {
		name, lvl = engine.ErrorName(d.Err), eventlog.Error
	}
	p.note(eventlog.Entry{Name: name, Text: requests.Describe(d), Level: lvl})
	return tea.Batch(p.conv().Reload(), p.tl().Reload(), p.in().Reload())
}

// requestCount is the status bar's segment: how many requests wait, and
// the key that shows them; "" when none do.
func (p *pane) requestCount() string {
	n := p.req().Total()
	switch n {
	case 0:
		return ""
	case 1:
		return "1 request (alt+7)"
	}
	return fmt.Sprintf("%d requests (alt+7)", n)
}
