// A group's timeline: each message once with its sender, and on one's own
// messages the delivery matrix, which opens to each member's lane.

package timeline

import (
	"context"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/wire"
)

// GroupSource is what the group view reads: *engine.Client implements it.
type GroupSource interface {
	GroupHistory(ctx context.Context, id wire.GroupID, after int64, limit int) ([]engine.GroupEntry, error)
}

// GroupLoadedMsg carries a group's history, oldest first.
type GroupLoadedMsg struct {
	Group   wire.GroupID
	Entries []engine.GroupEntry
	Err     error
}

// Group is the view of one group's timeline. It holds the newest
// MaxLoaded messages.
type Group struct {
	src     GroupSource
	ctx     context.Context
	th      themes.Theme
	w, h    int
	id      wire.GroupID
	name    string
	names   map[engine.Address]string
	entries []engine.GroupEntry
	open    bool // the lanes of one's own messages are shown
	err     string
	toggle  key.Binding
	loading bool
	again   bool
}

// NewGroup returns the view reading from src; ctx bounds its reads.
func NewGroup(ctx context.Context, src GroupSource, th themes.Theme) Group {
	return Group{src: src, ctx: ctx, th: th,
		toggle: key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "lanes"))}
}

// SetSource replaces the source (after a profile was reopened).
func (g *Group) SetSource(src GroupSource) {
	g.src = src
	g.loading, g.again = false, false
}

// Toggle is the key that opens and closes the lanes, for the help line.
func (g Group) Toggle() key.Binding { return g.toggle }

// SetSize sets the view's size in cells, title included.
func (g *Group) SetSize(w, h int) { g.w, g.h = w, h }

// SetNames sets the names shown for members.
func (g *Group) SetNames(names map[engine.Address]string) { g.names = names }

// SetGroup shows group id, named name, and reads its history.
func (g *Group) SetGroup(id wire.GroupID, name string) tea.Cmd {
	if id != g.id {
		g.entries, g.err, g.loading, g.again = nil, "", false, false
	}
	g.id, g.name = id, name
	return g.Reload()
}

// Reload reads the history again; calls while a read is in flight
// coalesce into one more read after it.
func (g *Group) Reload() tea.Cmd {
	if g.loading {
		g.again = true
		return nil
	}
	g.loading = true
	src, ctx, id := g.src, g.ctx, g.id
	return func() tea.Msg {
		var all []engine.GroupEntry
		after := int64(0)
		for {
			page, err := src.GroupHistory(ctx, id, after, PageSize)
			if err != nil {
				return GroupLoadedMsg{Group: id, Err: err}
			}
			all = append(all, page...)
			if len(all) > MaxLoaded {
				all = all[len(all)-MaxLoaded:]
			}
			if len(page) < PageSize {
				return GroupLoadedMsg{Group: id, Entries: all}
			}
			after = page[len(page)-1].Seq
		}
	}
}

// Update handles the view's reads, its key and the engine events that
// touch the group.
func (g Group) Update(msg tea.Msg) (Group, tea.Cmd) {
	switch msg := msg.(type) {
	case GroupLoadedMsg:
		if msg.Group != g.id {
			return g, nil
		}
		g.loading = false
		if msg.Err != nil {
			g.err = engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
		} else {
			g.err, g.entries = "", msg.Entries
		}
		if g.again {
			g.again = false
			return g, g.Reload()
		}
	case engine.Event:
		return g, g.Reload()
	case tea.KeyMsg:
		if input.Matches(msg, g.toggle) {
			g.open = !g.open
		}
	}
	return g, nil
}

func (g Group) label(a engine.Address) string {
	if n := g.names[a]; n != "" {
		return n
	}
	return a.String()
}

// View draws the view at instant now (the matrix says how long a lane has
// waited), newest messages at the bottom.
func (g Group) View(now time.Time, focused bool) string {
	if g.w <= 0 || g.h <= 0 {
		return ""
	}
	st := g.th.Timeline
	var lines []string
	for _, e := range g.entries {
		who := st.Peer.Render(g.label(e.Sender))
		if e.Own {
			who = st.Own.Render("you")
		}
		// A peer's text never drives the terminal: cleaned, on one line.
		lines = append(lines, st.Time.Render(e.At.Format("15:04"))+" "+who+" "+st.Body.Render(layout.OneLine(e.Body, max(g.w, 1)*4)))
		if !e.Own || len(e.Lanes) == 0 {
			continue
		}
		lines = append(lines, "      "+st.Accepted.Render(Matrix(e.Lanes, e.At, now, g.label)))
		if g.open {
			for _, l := range Lanes(e.Lanes, g.label) {
				lines = append(lines, "        "+st.Time.Render(l))
			}
		}
	}
	head := []string{layout.Title(g.th.Panel.Title, g.th.Panel.TitleFocused, focused, "# "+g.name, g.toggle.Help().Key+" lanes", g.w)}
	if g.err != "" {
		head = append(head, g.th.Panel.Error.Render(layout.Line(g.err, g.w)))
	}
	if len(g.entries) == 0 {
		head = append(head, g.th.Panel.Empty.Render(layout.Line(" no messages yet", g.w)))
	}
	if room := g.h - len(head); len(lines) > room {
		lines = lines[len(lines)-max(room, 0):]
	}
	return layout.Fit(append(head, lines...), g.w, g.h)
}
