// Package composer is the message editor: a textarea addressed to the chosen
// peer, which enforces the body size limit before anything is sent and
// refuses to send to a peer whose identity changed until it is accepted.
package composer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/line"
	"github.com/parley-chat/parley/wire"
)

// MaxBody is the largest body the composer sends to a person:
// wire.MaxSentCopyBodySize, what the sent copy to this person's other
// devices carries (a little under wire.MaxBodySize, 192 KiB). It is the
// same whether or not this person has other devices, so a text typed
// within it always goes (the engine refuses a longer one with other
// devices, engine.ErrCopyTooLarge).
const MaxBody = wire.MaxSentCopyBodySize

// MaxActionText is the longest reply or edit the composer sends to a
// person: wire.MaxSentActionTextSize, what the sent action copy to this
// person's other devices carries. MaxGroupActionText is a group's
// (wire.MaxActionTextSize: a group action has no such copy).
const (
	MaxActionText      = wire.MaxSentActionTextSize
	MaxGroupActionText = wire.MaxActionTextSize
)

// charLimit is the textarea's limit, in runes: one above the largest text
// any mode sends (a group's message). The textarea cuts a longer paste
// short without a word, so the limit must never be a mode's own: a text
// over the current mode's limit is kept whole and refused on send
// (message_too_large), never truncated and sent.
const charLimit = max(MaxBody, MaxGroupBody, MaxActionText, MaxGroupActionText) + 1

// Source is what the composer sends through: *engine.Client implements it.
// Enqueue stores a message (and forgets the conversation's draft in the same
// transaction) and returns at once; the client's loop hands it to the relay.
type Source interface {
	Enqueue(ctx context.Context, reqs []engine.SendRequest) ([]engine.SendResult, error)
	// RefreshPeerList brings the person's device list up to date (at
	// most once per connection), so that a device they linked gets its
	// lane, as parley send's check does before it stores.
	RefreshPeerList(ctx context.Context, user string) (engine.PeerAccount, bool, error)
}

// listWait bounds the device list's refresh before a send: a relay that
// does not answer in time refuses nothing, and the list held decides the
// lanes.
const listWait = 2 * time.Second

// GroupSource is what the composer sends to a group through:
// *engine.Client implements it. A source without it cannot write to a
// group (the composer says so).
type GroupSource interface {
	SendGroup(ctx context.Context, id wire.GroupID, body []byte) (engine.GroupSendResult, error)
}

// SentMsg reports one send: for a peer, Err nil means the message is stored
// as pending (the client's loop hands it to the relay; its events tell
// when); for a group, Err nil means the relay accepted every lane, and a
// *engine.MessageNotSentError that it is stored and pending (Unsent names
// the lanes still unsent). Any other error means nothing was stored. Group
// is set when the message went to a group (Peer is then zero).
type SentMsg struct {
	Peer   engine.Address
	Group  *wire.GroupID
	ID     wire.LogicalID
	Body   []byte
	Unsent []engine.Address
	Err    error
}

// entry is one message entered and not stored yet: the text, and the peer
// or group it goes to.
type entry struct {
	peer  engine.Address
	group *wire.GroupID
	body  []byte
}

// Model is the composer.
type Model struct {
	src     Source
	ctx     context.Context
	th      themes.Theme
	keys    KeyMap
	ta      textarea.Model
	w, h    int
	focus   bool
	peer    engine.Address
	group   *wire.GroupID // set while writing to a group (group.go)
	gname   string
	blocked string // why sending to peer is refused, if it is
	err     string
	note    string // the names a path completion found (attach.go)
	size    int    // bytes in the editor
	// line runs the sends in the order they were entered, with the
	// drafts' saves (Line); entered counts the sends not answered yet.
	line    *line.Line
	entered int
	// pend are printable keys gathered for one insertion, armed a burstMsg
	// on its way, lines the lines the text wants (burst.go).
	pend  []rune
	armed bool
	lines int
	// rev counts the changes to the textarea; vc is the last frame drawn
	// and what it was drawn from (view.go).
	rev int
	vc  *viewCache
	// mode is the reply or the edit Enter sends (action.go).
	mode mode
}

// New returns the composer; ctx bounds its sends.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = "› "
	ta.CharLimit = charLimit // runes; the mode's byte limit is checked on send
	ta.MaxHeight = 0
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	st := textarea.Style{
		Base: th.Composer.Text, Text: th.Composer.Text, CursorLine: th.Composer.Text,
		Placeholder: th.Composer.Placeholder, Prompt: th.Composer.Prompt, EndOfBuffer: th.Composer.Placeholder,
		LineNumber: th.Composer.Placeholder, CursorLineNumber: th.Composer.Placeholder,
	}
	ta.FocusedStyle, ta.BlurredStyle = st, st
	ta.Cursor.Style = th.Composer.Cursor
	ta.Cursor.TextStyle = th.Composer.Text
	ta.Cursor.SetMode(cursor.CursorStatic)
	m := Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(), ta: ta, lines: 2, vc: &viewCache{}, line: &line.Line{}}
	m.placeholder()
	return m
}

// SetSource replaces the source (after a reopen).
func (m *Model) SetSource(src Source) { m.src = src; m.entered = 0 }

// Line returns the line the composer's sends run on: the pane queues its
// draft saves on it too, so that a save asked for before Enter lands
// before the send that clears the draft, and one asked for after, after.
func (m Model) Line() *line.Line { return m.line }

// SetSize sets the composer's size, title included.
func (m *Model) SetSize(w, h int) {
	m.rev++
	if w != m.w {
		defer m.changed()
	}
	m.w, m.h = w, h
	m.ta.SetWidth(w)
	if th := max(h-1, 1); th != m.ta.Height() {
		m.ta.SetHeight(th)
		m.refit()
	}
}

// refit scrolls the text back to its first line after a change of height.
// The textarea keeps the offset it scrolled to while it was shorter: the
// key that adds a third line arrives before the composer grows to three,
// and the first line would stay hidden above a blank last one. The text is
// set again (which scrolls to the top), the cursor put back where it was,
// and the view scrolled only as far as the cursor needs.
func (m *Model) refit() {
	if m.ta.Value() == "" {
		return
	}
	info := m.ta.LineInfo()
	row, col := m.ta.Line(), info.StartColumn+info.ColumnOffset
	m.ta.SetValue(m.ta.Value())
	for m.ta.Line() > row {
		m.ta.CursorUp()
	}
	m.ta.SetCursor(col)
	if m.ta.Focused() {
		m.ta, _ = m.ta.Update(nil)
	}
}

// MaxLines is the most text lines the composer grows to.
const MaxLines = 8

// Lines is how many text lines the composer wants: what it holds, wrapped
// at its width, at least 2 and at most MaxLines. It is measured when the
// text changes, not on each call (the pane asks after every message).
func (m Model) Lines() int { return m.lines }

// Focus gives the composer the keyboard.
func (m *Model) Focus() tea.Cmd {
	m.focus = true
	return m.ta.Focus()
}

// Blur takes it away.
func (m *Model) Blur() {
	m.focus = false
	m.ta.Blur()
}

// KeyMap returns the composer's keys.
func (m Model) KeyMap() KeyMap { return m.keys }

// Unsent is how many entered messages the engine has not answered for yet.
// A send stores the message and returns (the client's loop hands it to the
// relay), so this is rarely more than the one being stored.
func (m Model) Unsent() int { return m.entered }

// TakeQueued takes back the entered messages whose send has not started
// (a group send waiting on the network holds those behind it) and returns
// them, in order, with the peer each was written to: they are never sent.
// A message written to a group has a zero peer and its group in groups
// (nil for a peer's).
func (m *Model) TakeQueued() (peers []engine.Address, groups []*wire.GroupID, bodies [][]byte) {
	for _, t := range m.line.Take(func(tag any) bool { _, ok := tag.(entry); return ok }) {
		e := t.(entry)
		peers, groups, bodies = append(peers, e.peer), append(groups, e.group), append(bodies, e.body)
	}
	m.entered = max(0, m.entered-len(bodies))
	return peers, groups, bodies
}

// Peer returns the address messages go to.
func (m Model) Peer() engine.Address { return m.peer }

// Value returns the text being written.
func (m Model) Value() string { return m.withPending() }

// SetValue replaces the text being written (a draft set aside or brought
// back).
func (m *Model) SetValue(text string) {
	m.pend = m.pend[:0]
	m.ta.SetValue(text)
	m.changed()
}

// SetPeer addresses the composer to peer (and no longer to a group).
func (m *Model) SetPeer(peer engine.Address) {
	if peer != m.peer {
		m.mode = mode{}
	}
	m.peer = peer
	m.group, m.gname = nil, ""
	m.err = ""
	m.placeholder()
}

// SetBlocked refuses (reason non-empty) or allows sending to the peer.
func (m *Model) SetBlocked(reason string) { m.blocked = reason }

func (m *Model) placeholder() {
	if m.group != nil {
		m.ta.Placeholder = "write to #" + m.gname + " · enter sends to every member"
		return
	}
	if m.peer.IsZero() {
		m.ta.Placeholder = "choose a conversation first"
		return
	}
	m.ta.Placeholder = "write to " + m.peer.String() + " · enter sends"
}

// Update handles keys (when focused) and send results.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case SentMsg:
		m.entered = max(0, m.entered-1)
		if msg.Err != nil {
			var nse *engine.MessageNotSentError
			if !errors.As(msg.Err, &nse) {
				// Nothing was stored: give the text back to edit.
				m.err = engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
				if m.Value() == "" && msg.Peer == m.peer && sameGroup(msg.Group, m.group) {
					m.SetValue(string(msg.Body))
				}
			}
		}
		return m, nil
	case ActedMsg:
		m.acted(msg)
		return m, nil
	case CompletedMsg:
		m.completed(msg)
		return m, nil
	case burstMsg:
		m.armed = false
		m.flush()
		return m, nil
	case tea.KeyMsg:
		if !m.focus {
			return m, nil
		}
		if plainKey(msg) {
			return m, m.gather(msg)
		}
		m.flush() // what was typed before this key comes first
		if input.Matches(msg, m.keys.Send) {
			return m.submit()
		}
		if msg.Type == tea.KeyEsc && m.mode.content != 0 {
			m.CancelMode()
			return m, nil
		}
	}
	if !m.focus {
		return m, nil
	}
	var cmd tea.Cmd
	if k, ok := msg.(tea.KeyMsg); ok && input.IsText(k) {
		// The textarea would take a word such as "home" for its key.
		m.ta.InsertString(string(k.Runes))
	} else {
		m.ta, cmd = m.ta.Update(msg)
		m.rev++
	}
	if _, ok := msg.(tea.KeyMsg); ok {
		m.edited()
	}
	return m, cmd
}

// limit is the largest text, in bytes, Enter sends in the current mode: a
// message to the peer or the group, or a reply or an edit there.
func (m Model) limit() int {
	action := m.mode.content != 0 && m.mode.peer == m.peer && sameGroup(m.mode.group, m.group)
	switch {
	case m.group != nil && action:
		return MaxGroupActionText
	case m.group != nil:
		return MaxGroupBody
	case action:
		return MaxActionText
	}
	return MaxBody
}

// Check reports why body cannot be sent to the current peer, or nil.
func (m Model) Check(body string) error {
	switch {
	case m.group != nil:
		if _, ok := m.src.(GroupSource); !ok {
			return errors.New("this profile's client cannot write to groups")
		}
		if len(body) > MaxGroupBody {
			return fmt.Errorf("message_too_large: %d bytes, the limit for a group is %d", len(body), MaxGroupBody)
		}
	case m.peer.IsZero():
		return errors.New("no conversation chosen: pick one or press n in conversations")
	case m.blocked != "":
		return errors.New(m.blocked)
	case len(body) > MaxBody:
		return fmt.Errorf("message_too_large: %d bytes, the limit is %d (a little under 192 KiB)", len(body), MaxBody)
	}
	return nil
}

func (m Model) submit() (Model, tea.Cmd) {
	body := m.ta.Value()
	if body == "" {
		return m, nil
	}
	if m.mode.content != 0 {
		if m.mode.peer == m.peer && sameGroup(m.mode.group, m.group) {
			return m.submitAction(body)
		}
		m.mode = mode{} // the conversation changed: a plain message
	}
	if cmd, ok := m.attach(body); ok {
		return m, cmd
	}
	if err := m.Check(body); err != nil {
		m.err = err.Error()
		return m, nil
	}
	m.err = ""
	m.ta.Reset()
	m.changed()
	e := entry{peer: m.peer, group: m.group, body: []byte(body)}
	if m.group != nil {
		e.peer = engine.Address{}
	}
	m.entered++
	return m, m.send(e)
}

// send queues the send of e on the line, now: sends reach the engine in
// the order they were entered, and each after the draft saves asked for
// before it.
func (m *Model) send(e entry) tea.Cmd {
	src, ctx := m.src, m.ctx
	if e.group != nil {
		return m.line.Cmd(e, sendGroup(ctx, src, *e.group, e.body))
	}
	return m.line.Cmd(e, func() tea.Msg {
		// A list that cannot be had (no relay, or one signed by another
		// account key) leaves the one held: the send goes to the devices
		// known, as the engine's receive rules say.
		lctx, cancel := context.WithTimeout(ctx, listWait)
		_, _, _ = src.RefreshPeerList(lctx, e.peer.User)
		cancel()
		res, err := src.Enqueue(ctx, []engine.SendRequest{{Peer: e.peer, Body: e.body, ClearDraft: true}})
		if err != nil {
			return SentMsg{Peer: e.peer, Body: e.body, Err: err}
		}
		return SentMsg{Peer: e.peer, ID: res[0].ID, Body: e.body, Err: res[0].Err}
	})
}

// View draws the composer in exactly its size. A frame is drawn again
// only when what it shows changed: while keys gather (a paste arriving key
// by key) the last one is returned as it is.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	k := m.viewKey()
	if m.vc != nil && m.vc.ok && m.vc.key == k {
		return m.vc.s
	}
	s := m.draw()
	if m.vc != nil {
		*m.vc = viewCache{key: k, s: s, ok: true}
	}
	return s
}

// draw renders the composer.
func (m Model) draw() string {
	to := "Composer"
	switch {
	case m.group != nil:
		to += " → #" + m.gname
	case !m.peer.IsZero():
		to += " → " + m.peer.String()
	}
	detail := fmt.Sprintf("%s / 192 KiB", size(m.size))
	if n := m.entered; n > 1 {
		detail = fmt.Sprintf("%d storing · %s", n, detail)
	}
	title := layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, to, detail, m.w)
	lines := []string{title}
	switch {
	case m.blocked != "":
		lines = append(lines, m.th.Composer.Blocked.Render(layout.Line(" "+m.blocked, m.w)))
	case m.err != "":
		lines = append(lines, m.th.Composer.Error.Render(layout.Line(" "+m.err, m.w)))
	case m.note != "":
		lines = append(lines, m.th.Composer.Placeholder.Render(layout.Line(" "+layout.Clean([]byte(m.note)), m.w)))
	case m.mode.content != 0:
		lines = append(lines, m.th.Composer.Placeholder.Render(layout.Line(" "+m.mode.quote, m.w)))
	}
	lines = append(lines, layout.Split(m.ta.View())...)
	return layout.Fit(lines, m.w, m.h)
}

func size(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}
