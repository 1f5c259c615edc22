// Package devices is the panel listing the devices of this person's
// account, as the device list this device holds names them: each device,
// its state and when it was linked, this one marked. On the device that
// holds the account key it removes a device (asked first) and links a new
// one by the code that device printed (the six digits compared first,
// link.go); it says how a new device is linked. It reads and acts through
// the engine, and reaches the relay's provisioning mailbox only through
// the Linking the command line gives it.
package devices

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/wire"
)

// Source is what the panel reads and acts on: *engine.Client implements it.
type Source interface {
	Self() engine.Address
	Account(ctx context.Context) (engine.Account, error)
	RemoveDevice(ctx context.Context, device engine.Address) (wire.DeviceList, error)
	BeginLink(ctx context.Context, code engine.LinkCode, box engine.LinkMailbox) (*engine.HostLink, error)
}

var _ Source = (*engine.Client)(nil)

// LoadedMsg carries a fresh read of the account.
type LoadedMsg struct {
	Account engine.Account
	Err     error
}

// RemovedMsg reports a removal: the list it made, or why it failed.
type RemovedMsg struct {
	Device engine.Address
	List   wire.DeviceList
	Err    error
}

// Model is the devices panel.
type Model struct {
	src   Source
	ctx   context.Context
	th    themes.Theme
	keys  KeyMap
	w, h  int
	focus bool
	// linkHint is the command a new device runs to be linked (set by the
	// command line, which knows the profile's relay), shown on l.
	linkHint string

	self    engine.Address
	list    wire.DeviceList
	holder  bool           // this device holds the account key
	sel     engine.Address // the device under the cursor
	asking  bool           // "remove sel?" is on screen
	status  string         // what the last action did
	err     string         // why the last read failed
	loading bool

	// Linking by code (link.go): nil linking leaves it to the command
	// line. run numbers the ceremonies, so that the outcome of one given
	// up is not taken for the next's.
	linking  *Linking
	link     linkState
	code     textinput.Model
	run      int
	box      Mailbox
	hostLink *engine.HostLink
	lctx     context.Context
	cancel   context.CancelFunc
}

// New returns the panel reading from src (nil until SetSource); ctx bounds
// its reads and actions.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	in := textinput.New()
	in.Prompt, in.Placeholder, in.CharLimit = " code: ", "the code=… that parley link printed on the new device", 1024
	in.PromptStyle = th.Devices.Confirm
	in.Cursor.SetMode(cursor.CursorStatic) // a blink redraws the screen twice a second for nothing
	return Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(), code: in}
}

// SetSource replaces the source (a profile opened again); nil turns the
// panel off. A link under way with the old source is given up.
func (m *Model) SetSource(src Source) {
	if m.link != linkIdle {
		m.endLink()
	}
	m.src, m.loading = src, false
	m.list, m.sel, m.holder = wire.DeviceList{}, engine.Address{}, false
	if src != nil {
		m.self = src.Self()
	}
}

// SetLinkHint sets the command a new device runs to be linked.
func (m *Model) SetLinkHint(hint string) { m.linkHint = hint }

// SetSize sets the panel's size in cells, title included.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Focus gives the panel the keyboard and reads the list again (another
// device may have been linked or removed since).
func (m *Model) Focus() tea.Cmd {
	m.focus = true
	return m.Reload()
}

// Blur takes the keyboard away; a removal not confirmed yet is not done.
func (m *Model) Blur() {
	m.focus = false
	m.ask(false)
	m.blurLink()
}

// KeyMap returns the panel's keys for the help line.
func (m Model) KeyMap() KeyMap { return m.keys }

// Reload reads the account again.
func (m *Model) Reload() tea.Cmd {
	if m.src == nil || m.loading {
		return nil
	}
	m.loading = true
	src, ctx := m.src, m.ctx
	return func() tea.Msg {
		a, err := src.Account(ctx)
		return LoadedMsg{Account: a, Err: err}
	}
}

// Update handles the panel's messages and, when focused, its keys.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case LoadedMsg:
		m.loading = false
		switch {
		case errors.Is(msg.Err, engine.ErrNoAccount):
			m.err = "this profile has no account yet"
		case msg.Err != nil:
			m.err = engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
		default:
			m.err = ""
			m.list, m.holder = msg.Account.List, msg.Account.Key != nil
			m.keepCursor()
		}
		return m, nil
	case BegunMsg:
		return m.begun(msg), nil
	case LinkedMsg:
		return m.linked(msg)
	case RemovedMsg:
		m.status = DescribeRemoval(msg)
		if msg.Err == nil {
			m.list = msg.List
			m.keepCursor()
		}
		return m, nil
	case engine.Event:
		if msg.Kind == engine.EventResync {
			return m, m.Reload()
		}
	case tea.KeyMsg:
		if m.focus {
			return m.key(msg)
		}
		return m, nil
	}
	return m, nil
}

// DescribeRemoval says in words what a removal did, for the status line
// and the event log.
func DescribeRemoval(r RemovedMsg) string {
	if r.Err != nil {
		return fmt.Sprintf("%s not removed: %s: %v", r.Device, engine.ErrorName(r.Err), r.Err)
	}
	return fmt.Sprintf("removed %s (device list generation %d): it can no longer connect, and nothing more is sent to it", r.Device, r.List.Generation)
}

func (m Model) key(k tea.KeyMsg) (Model, tea.Cmd) {
	if m.link != linkIdle {
		return m.linkKey(k)
	}
	if m.asking {
		yes := input.Matches(k, m.keys.Confirm)
		m.ask(false)
		if yes {
			return m, m.remove()
		}
		m.status = "kept " + m.sel.String()
		return m, nil
	}
	i := m.cursor()
	switch {
	case input.Matches(k, m.keys.Up):
		if i > 0 {
			m.sel = m.address(m.list.Entries[i-1])
		}
	case input.Matches(k, m.keys.Down):
		if i+1 < len(m.list.Entries) {
			m.sel = m.address(m.list.Entries[i+1])
		}
	case input.Matches(k, m.keys.Link):
		m.status = m.linkText()
	case input.Matches(k, m.keys.Add):
		if m.linking == nil || m.linking.Join == nil || m.src == nil || !m.holder {
			m.status = m.linkText()
			return m, nil
		}
		return m, m.startLink()
	case input.Matches(k, m.keys.Remove):
		if i < 0 {
			return m, nil
		}
		switch e := m.list.Entries[i]; {
		case !m.holder:
			m.status = "only a device holding the account key (" + m.first() + ") removes a device"
		case m.sel == m.self:
			m.status = "this device cannot remove itself: remove it from another one, or stop using it"
		case e.State != wire.DeviceActive:
			m.status = m.sel.String() + " is not active"
		default:
			m.ask(true)
		}
	}
	return m, nil
}

// linkText says how a new device joins this account.
func (m Model) linkText() string {
	hint := m.linkHint
	if hint == "" {
		hint = "parley link --profile DIR --relay URL"
	}
	if !m.holder {
		return "to link a device: run " + hint + " on it, then parley device add CODE on " + m.first() + " (it holds the account key)"
	}
	return "to link a device: run " + hint + " on it, then parley device add CODE here and compare the six digits"
}

// first names the devices that hold the account key, as a person reads
// it: the list does not say which they are.
func (m Model) first() string {
	return "the device that made the account, or one restored from its backup"
}

// remove removes the device under the cursor, in a command.
func (m Model) remove() tea.Cmd {
	if m.src == nil || m.cursor() < 0 {
		return nil
	}
	src, ctx, dev := m.src, m.ctx, m.sel
	return func() tea.Msg {
		l, err := src.RemoveDevice(ctx, dev)
		return RemovedMsg{Device: dev, List: l, Err: err}
	}
}

func (m *Model) ask(on bool) {
	m.asking = on
	m.keys.asking(on)
}

func (m Model) address(e wire.DeviceEntry) engine.Address {
	return engine.Address{User: m.list.User, Device: e.Number}
}

// cursor is the index of the device under the cursor, -1 when none.
func (m Model) cursor() int {
	for i, e := range m.list.Entries {
		if m.address(e) == m.sel {
			return i
		}
	}
	return -1
}

// keepCursor keeps the cursor on its device, or on the first one.
func (m *Model) keepCursor() {
	if m.cursor() < 0 {
		m.sel = engine.Address{}
		if len(m.list.Entries) > 0 {
			m.sel = m.address(m.list.Entries[0])
		}
		m.ask(false)
	}
}

// Active is the number of active devices, for the title.
func (m Model) Active() int {
	n := 0
	for _, e := range m.list.Entries {
		if e.State == wire.DeviceActive {
			n++
		}
	}
	return n
}

// View draws the panel in exactly its size.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	st := m.th.Devices
	sub := fmt.Sprintf("%d active · list generation %d", m.Active(), m.list.Generation)
	lines := []string{layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Devices", sub, m.w)}
	if m.err != "" {
		lines = append(lines, m.th.Panel.Error.Render(layout.Line(m.err, m.w)))
	}
	switch {
	case m.asking:
		lines = append(lines, st.Confirm.Render(layout.Line(fmt.Sprintf(" remove %s? it can no longer connect, its pending lanes end removed · y removes, n keeps", m.sel), m.w)))
	case m.link == linkTyping:
		lines = append(lines, layout.Line(m.linkLine(), m.w))
		if m.status != "" {
			lines = append(lines, m.th.Panel.Error.Render(layout.Line(" "+m.status, m.w)))
		}
	case m.link != linkIdle:
		lines = append(lines, st.Confirm.Render(layout.Line(m.linkLine(), m.w)))
	case m.status != "":
		lines = append(lines, st.State.Render(layout.Line(" "+m.status, m.w)))
	}
	if len(m.list.Entries) == 0 && m.err == "" {
		lines = append(lines, m.th.Panel.Empty.Render(layout.Line(" reading the account's device list", m.w)))
	}
	i := m.cursor()
	first := 0
	if body := m.h - len(lines); i >= body && body > 0 {
		first = i - body + 1
	}
	for j := first; j < len(m.list.Entries) && len(lines) < m.h; j++ {
		lines = append(lines, m.row(m.list.Entries[j], j == i, st))
	}
	return layout.Fit(lines, m.w, m.h)
}

// row draws one device: its address, state, when it was linked, and
// whether it is this one or holds the account key.
func (m Model) row(e wire.DeviceEntry, cur bool, st themes.ListStyles) string {
	mark, row := "  ", st.Row
	if cur {
		mark = "▸ "
		if m.focus {
			row = st.Selected
		}
	}
	addr := m.address(e)
	state, stateStyle := "active", st.State
	if e.State == wire.DeviceRevoked {
		state, stateStyle = "removed", st.Warn
	}
	var notes string
	if addr == m.self {
		notes += " · this device"
		if m.holder {
			notes += ", holds the account key"
		}
	}
	return row.Render(mark) + st.Peer.Render(addr.String()) + row.Render(" · ") + stateStyle.Render(state) +
		row.Render(" · linked ") + st.Time.Render(time.Unix(e.Linked, 0).Format("2006-01-02 15:04")) + row.Render(notes)
}
