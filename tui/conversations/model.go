// Package conversations is the panel listing a profile's peers with their
// pending and unread counts, where a conversation is chosen or started by
// address.
package conversations

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/wire"
)

// Source is what the panel reads: *engine.Client implements it. The panel
// lists a person whose device list is held as one conversation.
type Source interface {
	ConversationsByPerson(ctx context.Context) ([]engine.Conversation, error)
}

// LoadedMsg carries a fresh read of the conversations: the peers, with
// the group messages counted in Groups rather than with their peer.
type LoadedMsg struct {
	List   []engine.Conversation
	Groups map[wire.GroupID]GroupPending
	Err    error
}

// SelectedMsg reports that the chosen conversation changed: a peer, or a
// group (Group set, Name its name, Peer the peer chosen before).
type SelectedMsg struct {
	Peer  engine.Address
	Group *wire.GroupID
	Name  string
}

// NameMsg asks for a device to be given a name ("" forgets it); the panel
// shows names set with SetNames.
type NameMsg struct {
	Peer engine.Address
	Name string
}

// Item is one conversation as shown.
type Item struct {
	engine.Conversation
	Unread  int
	Changed bool // the peer's identity changed and is not accepted yet
}

// Model is the conversations panel.
type Model struct {
	src    Source
	ctx    context.Context
	th     themes.Theme
	keys   KeyMap
	w, h   int
	focus  bool
	stored []engine.Conversation
	local  []engine.Address // started here, nothing stored yet
	sel    engine.Address
	// unread and change are kept by device: a person's conversation
	// shows its devices' together.
	unread map[engine.Address]map[wire.LogicalID]bool
	change map[engine.Address]bool
	names  map[engine.Address]string
	input  textinput.Model
	adding bool
	naming bool // the input holds a name for sel, not an address
	group  bool // the input holds a group command
	err    string

	loading, again bool

	groups        []engine.GroupInfo
	groupPending  map[wire.GroupID]GroupPending
	groupUnread   map[wire.GroupID]map[wire.LogicalID]bool
	groupsLoading bool
	selGroup      *wire.GroupID // the group chosen, if one is
}

// New returns the panel reading from src; ctx bounds its reads.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	in := textinput.New()
	in.Prompt = "address: "
	in.Placeholder = "user/device"
	in.CharLimit = 80
	in.PromptStyle = th.Conversations.Input
	in.TextStyle = th.Conversations.Input
	in.PlaceholderStyle = th.Panel.Empty
	in.Cursor.Style = th.Composer.Cursor
	in.Cursor.SetMode(cursor.CursorStatic) // a blink redraws the screen twice a second for nothing
	return Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(), input: in,
		unread: map[engine.Address]map[wire.LogicalID]bool{}, change: map[engine.Address]bool{},
		groupUnread: map[wire.GroupID]map[wire.LogicalID]bool{}}
}

// SetSource replaces the source (after a profile was reopened); the next
// Reload reads from it.
func (m *Model) SetSource(src Source) {
	m.src = src
	m.loading, m.again, m.groupsLoading = false, false, false
}

// SetSize sets the panel's size in cells, title included.
func (m *Model) SetSize(w, h int) {
	m.w, m.h = w, h
	m.input.Width = w - len(m.input.Prompt) - 2
}

// Focus gives the panel the keyboard.
func (m *Model) Focus() { m.focus = true }

// Blur takes the keyboard away, cancelling a half-typed address.
func (m *Model) Blur() {
	m.focus = false
	m.stopAdding()
}

// Capturing reports whether typed text goes to the panel (an address or a
// name is being entered), so that global single-letter keys stay out of its
// way.
func (m Model) Capturing() bool { return m.adding || m.naming || m.group }

// SetNames sets the names shown next to addresses.
func (m *Model) SetNames(names map[engine.Address]string) { m.names = names }

// Unread is the number of messages delivered to conversations other than
// the one chosen since they were last chosen.
func (m Model) Unread() int {
	n := 0
	for _, ids := range m.unread {
		n += len(ids)
	}
	return n
}

// KeyMap returns the panel's keys for the help line.
func (m Model) KeyMap() KeyMap { return m.keys }

// Selected returns the chosen peer (zero when there is none).
func (m Model) Selected() engine.Address { return m.sel }

// Items returns the conversations as shown, stored ones first.
func (m Model) Items() []Item {
	out := make([]Item, 0, len(m.stored)+len(m.local))
	seen := make(map[engine.Address]bool, len(m.stored))
	rows := m.rows()
	unread, changed := map[engine.Address]int{}, map[engine.Address]bool{}
	for a, ids := range m.unread {
		unread[rows.of(a)] += len(ids)
	}
	for a := range m.change {
		changed[rows.of(a)] = true
	}
	for _, c := range m.stored {
		seen[c.Peer] = true
		out = append(out, Item{Conversation: c, Unread: unread[c.Peer], Changed: changed[c.Peer]})
	}
	for _, a := range m.local {
		if !seen[a] {
			out = append(out, Item{Conversation: engine.Conversation{Peer: a}, Unread: len(m.unread[a]), Changed: m.change[a]})
		}
	}
	return out
}

// Row returns the address of the conversation device a is listed under:
// its person's when a stored conversation is a person's of a's user, a
// itself otherwise.
func (m Model) Row(a engine.Address) engine.Address { return m.rowOf(a) }

// rowOf is Row.
func (m Model) rowOf(a engine.Address) engine.Address { return m.rows().of(a) }

// rowIndex maps devices to their rows: the people listed, by user (a
// device of a listed person is folded into the person's row).
type rowIndex map[string]engine.Address

// rows indexes the people of the stored conversations.
func (m Model) rows() rowIndex {
	x := rowIndex{}
	for _, c := range m.stored {
		if c.Person() {
			x[c.Peer.User] = c.Peer
		}
	}
	return x
}

// of returns the row device a is listed under.
func (x rowIndex) of(a engine.Address) engine.Address {
	if p, ok := x[a.User]; ok {
		return p
	}
	return a
}

// Select chooses peer (its person's conversation for a device of a person
// listed as one), adding it to the list when it is new, and reports the
// choice.
func (m *Model) Select(peer engine.Address) tea.Cmd {
	peer = m.rowOf(peer)
	if !m.has(peer) {
		m.local = append(m.local, peer)
	}
	return m.choose(peer)
}

// SetChanged marks or clears a peer whose identity changed.
func (m *Model) SetChanged(peer engine.Address, changed bool) {
	if changed {
		m.change[peer] = true
	} else {
		delete(m.change, peer)
	}
}

// Reload reads the conversations again; calls while a read is in flight
// coalesce into one more read after it.
func (m *Model) Reload() tea.Cmd {
	if m.loading {
		m.again = true
		return nil
	}
	m.loading = true
	src, ctx := m.src, m.ctx
	read := func() tea.Msg {
		l, err := src.ConversationsByPerson(ctx)
		msg := LoadedMsg{List: l, Err: err}
		if gs, ok := src.(GroupSource); ok && err == nil {
			if groups, err := gs.Groups(ctx); err == nil && len(groups) > 0 {
				msg.Groups, msg.Err = splitGroups(ctx, gs, l)
			}
		}
		return msg
	}
	if m.groupsLoading {
		return read
	}
	groups := m.reloadGroups()
	if groups == nil {
		return read
	}
	m.groupsLoading = true
	return tea.Batch(read, groups)
}

// Update handles the panel's messages, keys (when focused) and engine
// events.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case LoadedMsg:
		m.loading = false
		if msg.Err != nil {
			m.err = engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
		} else {
			m.err = ""
			m.stored, m.groupPending = msg.List, msg.Groups
		}
		var cmd tea.Cmd
		if m.sel.IsZero() {
			if items := m.Items(); len(items) > 0 {
				cmd = m.choose(items[0].Peer)
			}
		}
		if m.again {
			m.again = false
			return m, tea.Batch(cmd, m.Reload())
		}
		return m, cmd
	case GroupsLoadedMsg:
		m.groupsLoading = false
		if msg.Err != nil {
			m.err = engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
		} else {
			m.groups = msg.List
		}
		return m, nil
	case engine.Event:
		return m.event(msg)
	case tea.KeyMsg:
		if !m.focus {
			return m, nil
		}
		return m.key(msg)
	}
	if m.adding || m.naming || m.group {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m Model) event(e engine.Event) (Model, tea.Cmd) {
	switch e.Kind {
	case engine.EventReceived:
		if r := e.Result; r != nil && r.Group != nil {
			m.groupDelivered(r)
		} else if r != nil && r.Kind == engine.ResultDelivery && m.rowOf(r.Sender) != m.sel {
			if m.unread[r.Sender] == nil {
				m.unread[r.Sender] = map[wire.LogicalID]bool{}
			}
			m.unread[r.Sender][r.ID] = true
		}
	case engine.EventIdentityAccepted:
		delete(m.change, e.Peer)
	}
	return m, m.Reload()
}

func (m Model) key(k tea.KeyMsg) (Model, tea.Cmd) {
	if m.adding || m.naming || m.group {
		switch {
		case input.Matches(k, m.keys.Cancel):
			m.stopAdding()
			return m, nil
		case m.group && input.Matches(k, m.keys.Add):
			c, err := ParseGroupCommand(m.input.Value(), m.groups)
			if err != nil {
				m.err = "invalid_group_command: " + err.Error()
				return m, nil
			}
			m.err = ""
			m.stopAdding()
			return m, func() tea.Msg { return c }
		case m.naming && input.Matches(k, m.keys.Add):
			name := strings.TrimSpace(m.input.Value())
			if err := engine.CheckContactName(name); err != nil {
				m.err = engine.ErrorName(err) + ": " + err.Error()
				return m, nil
			}
			peer := m.sel
			m.err = ""
			m.stopAdding()
			return m, func() tea.Msg { return NameMsg{Peer: peer, Name: name} }
		case input.Matches(k, m.keys.Add):
			a, err := engine.ParseAddress(m.input.Value())
			if err != nil {
				m.err = "invalid_address: " + err.Error()
				return m, nil
			}
			m.err = ""
			m.stopAdding()
			return m, m.Select(a)
		}
		if input.IsText(k) {
			input.Insert(&m.input, k.Runes)
			return m, nil
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(k)
		return m, cmd
	}
	items := m.Items()
	i := m.cursor(items)
	switch {
	case input.Matches(k, m.keys.Up):
		if i > 0 {
			return m, m.chooseAt(items, i-1)
		}
	case input.Matches(k, m.keys.Down):
		if i+1 < len(items)+len(m.groups) {
			return m, m.chooseAt(items, i+1)
		}
	case input.Matches(k, m.keys.New):
		m.adding = true
		m.input.Prompt, m.input.Placeholder, m.input.CharLimit = "address: ", "user/device", 80
		m.input.Reset()
		return m, m.startInput()
	case input.Matches(k, m.keys.Group):
		m.group = true
		m.input.Prompt, m.input.Placeholder, m.input.CharLimit = "group: ", "create NAME MEMBER… | add/remove GROUP MEMBER…", 400
		m.input.Reset()
		return m, m.startInput()
	case input.Matches(k, m.keys.Name):
		if m.sel.IsZero() {
			return m, nil
		}
		m.naming = true
		m.input.Prompt, m.input.Placeholder, m.input.CharLimit = "name: ", "empty forgets it", engine.MaxContactName
		m.input.SetValue(m.names[m.sel])
		m.input.CursorEnd()
		return m, m.startInput()
	}
	return m, nil
}

// startInput shows the input line for an address or a name.
func (m *Model) startInput() tea.Cmd {
	m.err = ""
	m.input.Width = m.w - len(m.input.Prompt) - 2
	m.keys.Add.SetEnabled(true)
	m.keys.Cancel.SetEnabled(true)
	m.keys.New.SetEnabled(false)
	m.keys.Name.SetEnabled(false)
	m.keys.Group.SetEnabled(false)
	return m.input.Focus()
}

func (m *Model) stopAdding() {
	m.adding, m.naming, m.group = false, false, false
	m.input.Blur()
	m.keys.Add.SetEnabled(false)
	m.keys.Cancel.SetEnabled(false)
	m.keys.New.SetEnabled(true)
	m.keys.Name.SetEnabled(true)
	m.keys.Group.SetEnabled(true)
}

func (m *Model) choose(peer engine.Address) tea.Cmd {
	m.sel, m.selGroup = peer, nil
	rows := m.rows()
	for a := range m.unread {
		if rows.of(a) == peer {
			delete(m.unread, a)
		}
	}
	return func() tea.Msg { return SelectedMsg{Peer: peer} }
}

func (m Model) has(peer engine.Address) bool {
	for _, it := range m.Items() {
		if it.Peer == peer {
			return true
		}
	}
	return false
}

func (m Model) index(items []Item) int {
	for i, it := range items {
		if it.Peer == m.sel {
			return i
		}
	}
	return -1
}

// View draws the panel in exactly its size.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	st := m.th.Conversations
	items := m.Items()
	lines := []string{layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Conversations", fmt.Sprint(len(items)+len(m.groups)), m.w)}
	if m.adding || m.naming || m.group {
		lines = append(lines, layout.Line(m.input.View(), m.w))
	}
	if m.err != "" {
		lines = append(lines, m.th.Panel.Error.Render(layout.Line(m.err, m.w)))
	}
	if len(items) == 0 && len(m.groups) == 0 {
		lines = append(lines, m.th.Panel.Empty.Render(layout.Line(" none yet: n starts one", m.w)))
	}
	body := m.h - len(lines)
	first := 0
	if i := m.index(items); i >= body && body > 0 {
		first = i - body + 1
	}
	for i := first; i < len(items) && len(lines) < m.h; i++ {
		lines = append(lines, m.row(items[i], st))
	}
	for _, g := range m.groupRows(st) {
		if len(lines) < m.h {
			lines = append(lines, g)
		}
	}
	return layout.Fit(lines, m.w, m.h)
}

func (m Model) row(it Item, st themes.ConversationStyles) string {
	mark := "  "
	name := st.Item
	if it.Peer == m.sel && m.selGroup == nil {
		mark = "▸ "
		name = st.Selected
		if m.focus {
			name = st.Cursor
		}
	}
	counts := ""
	if it.PendingIn > 0 {
		counts += fmt.Sprintf(" in %d", it.PendingIn)
	}
	if it.PendingOut > 0 {
		counts += fmt.Sprintf(" out %d", it.PendingOut)
	}
	label := it.Peer.String()
	if n := m.names[it.Peer]; n != "" {
		label = n + " · " + label
	}
	s := name.Render(mark+label) + st.Counts.Render(counts)
	if it.Unread > 0 {
		s += st.Unread.Render(fmt.Sprintf(" new %d", it.Unread))
	}
	if it.Changed {
		s += st.Changed.Render(" ⚠ identity changed")
	}
	return s
}
