package devices

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/internal/input"
)

// Linking a device by its code, on the device that holds the account key:
// what `parley device add CODE` does, in four states. The person types the
// code the new device printed; the panel joins its mailbox and shows the
// six digits; y links, anything else abandons (the mailbox closed, the
// profile untouched: nothing changes before the confirmation); the outcome
// is one line.

// LinkWait bounds a ceremony begun from the panel: the life of the new
// device's mailbox on the relay.
const LinkWait = 10 * time.Minute

// Mailbox is the new device's provisioning mailbox, joined.
type Mailbox interface {
	engine.LinkMailbox
	Close() error
}

// Linking is what the panel needs from the command line to link by code:
// the relay's provisioning mailbox, which the chat does not reach itself
// (it must not import the transport), and the profile's setting for
// strangers, which lives beside the store and travels in the package.
type Linking struct {
	// Join joins the mailbox code names, or says why not (a relay other
	// than the profile's).
	Join func(ctx context.Context, code engine.LinkCode) (Mailbox, error)
	// AcceptAll is the profile's setting for strangers (nil: false).
	AcceptAll func() bool
}

// linkState is where a link begun from the panel stands.
type linkState int

const (
	linkIdle      linkState = iota
	linkTyping              // the code's input is open
	linkJoining             // joining the mailbox, waiting for the digits
	linkChecking            // the digits are shown: y links
	linkFinishing           // confirmed: the list, the package, the new device's word
)

// BegunMsg reports the start of a ceremony: the digits to compare, or
// why there are none.
type BegunMsg struct {
	run  int
	link *engine.HostLink
	box  Mailbox
	Err  error
}

// LinkedMsg reports the end of a ceremony that the person confirmed.
type LinkedMsg struct {
	run    int
	Result engine.LinkResult
	Err    error
}

// DescribeLink says in words what a confirmed link did, for the status
// line and the event log; the error's text is cleaned of control
// characters, as it may carry what the relay or the new device said.
func DescribeLink(l LinkedMsg) string {
	if l.Err != nil {
		return "not linked: " + engine.ErrorName(l.Err) + ": " + layout.OneLine([]byte(l.Err.Error()), 300)
	}
	return fmt.Sprintf("linked %s (device list generation %d): it has the account's package and receives from now on",
		l.Result.Device, l.Result.List.Generation)
}

// SetLinking sets how the panel joins a new device's mailbox; nil leaves
// linking to the command line (l and a then say how).
func (m *Model) SetLinking(l *Linking) { m.linking = l }

// Capturing reports whether typed text goes to the panel (the code).
func (m Model) Capturing() bool { return m.link == linkTyping }

// startLink opens the code's input.
func (m *Model) startLink() tea.Cmd {
	m.link, m.status = linkTyping, ""
	m.code.Reset()
	m.code.Width = max(m.w-len(m.code.Prompt)-2, 1)
	m.keys.linking(true)
	return m.code.Focus()
}

// endLink closes the ceremony in progress, if any, and returns to the list.
func (m *Model) endLink() {
	if m.box != nil {
		m.box.Close()
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.link, m.box, m.hostLink, m.lctx, m.cancel = linkIdle, nil, nil, nil, nil
	m.code.Blur()
	m.keys.linking(false)
}

// blurLink gives up a link not confirmed yet when the panel loses the
// keyboard; a confirmed one runs to its end.
func (m *Model) blurLink() {
	switch m.link {
	case linkTyping, linkJoining, linkChecking:
		m.endLink()
		m.status = "not linked: the panel was left before the digits were confirmed (nothing was changed)"
	}
}

// linkKey handles a key while a link is under way.
func (m Model) linkKey(k tea.KeyMsg) (Model, tea.Cmd) {
	switch m.link {
	case linkTyping:
		switch {
		case input.Matches(k, m.keys.Back):
			m.endLink()
			m.status = "not linked: no code entered"
			return m, nil
		case input.Matches(k, m.keys.Submit):
			return m.join()
		case input.IsText(k):
			input.Insert(&m.code, k.Runes)
			return m, nil
		}
		var cmd tea.Cmd
		m.code, cmd = m.code.Update(k)
		return m, cmd
	case linkJoining:
		if input.Matches(k, m.keys.Back) {
			m.endLink() // the context's end stops the join
			m.status = "not linked: stopped before the digits (nothing was changed)"
		}
	case linkChecking:
		if input.Matches(k, m.keys.Confirm) {
			return m.finish()
		}
		m.endLink()
		m.status = "not linked: the digits were not confirmed (nothing was changed)"
	case linkFinishing:
		// Confirmed: the list may be published already, so it runs to
		// its end (or LinkWait's).
	}
	return m, nil
}

// join reads the code and begins the ceremony in a command.
func (m Model) join() (Model, tea.Cmd) {
	text := strings.TrimPrefix(strings.TrimSpace(m.code.Value()), "code=")
	code, err := engine.ParseLinkCode(text)
	if err != nil {
		m.status = "not a code that parley link printed: paste the whole code=… value"
		return m, nil
	}
	m.code.Blur()
	m.run++
	m.link, m.status = linkJoining, "joining the new device's mailbox…"
	ctx, cancel := context.WithTimeout(m.ctx, LinkWait)
	m.lctx, m.cancel = ctx, cancel
	src, join, run := m.src, m.linking.Join, m.run
	return m, func() tea.Msg {
		box, err := join(ctx, code)
		if err != nil {
			return BegunMsg{run: run, Err: err}
		}
		l, err := src.BeginLink(ctx, code, box)
		if err != nil {
			box.Close()
			return BegunMsg{run: run, Err: err}
		}
		return BegunMsg{run: run, link: l, box: box}
	}
}

// begun shows the digits, or why there are none.
func (m Model) begun(b BegunMsg) Model {
	if b.run != m.run || m.link != linkJoining {
		if b.box != nil {
			b.box.Close() // a ceremony given up before its digits came
		}
		return m
	}
	if b.Err != nil {
		m.endLink()
		m.status = "not linked: " + engine.ErrorName(b.Err) + ": " + layout.OneLine([]byte(b.Err.Error()), 300)
		return m
	}
	m.link, m.hostLink, m.box, m.status = linkChecking, b.link, b.box, ""
	m.keys.linking(true)
	m.keys.Confirm.SetEnabled(true)
	m.keys.Cancel.SetEnabled(true)
	m.keys.Submit.SetEnabled(false)
	m.keys.Back.SetEnabled(false)
	return m
}

// finish links, the digits confirmed, in a command.
func (m Model) finish() (Model, tea.Cmd) {
	m.link = linkFinishing
	m.status = "linking " + m.hostLink.Device().String() + ": waiting for it to join, then sending the account's package…"
	l, box, run, ctx := m.hostLink, m.box, m.run, m.lctx
	acceptAll := m.linking.AcceptAll != nil && m.linking.AcceptAll()
	return m, func() tea.Msg {
		res, err := l.Finish(ctx, engine.HistoryChoice{Mode: engine.HistoryAll}, acceptAll, nil)
		box.Close()
		return LinkedMsg{run: run, Result: res, Err: err}
	}
}

// linked shows the outcome and reads the list again.
func (m Model) linked(l LinkedMsg) (Model, tea.Cmd) {
	if l.run != m.run {
		return m, nil
	}
	m.box = nil // closed by the command
	m.endLink()
	m.status = DescribeLink(l)
	return m, m.Reload()
}

// linkLine is the panel's line while a link is under way.
func (m Model) linkLine() string {
	switch m.link {
	case linkTyping:
		return m.code.View()
	case linkChecking:
		d := m.hostLink.Check()
		return fmt.Sprintf(" link %s? the new device must show check=%s · y links, n cancels", m.hostLink.Device(), d)
	}
	return " " + m.status
}
