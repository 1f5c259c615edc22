// A group's timeline: each message once with its sender, on one's own
// messages the delivery matrix (which opens to each member's lane), and
// the group's messages received and still waiting for a decision, with the
// keys that commit, discard or download them right there: a group message
// waits in its group, never in its sender's one-to-one conversation.

package timeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/actiontext"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/wire"
)

// GroupSource is what the group view reads and acts through:
// *engine.Client implements it.
type GroupSource interface {
	GroupHistory(ctx context.Context, id wire.GroupID, after int64, limit int) ([]engine.GroupEntry, error)
	Group(ctx context.Context, id wire.GroupID) (engine.GroupInfo, error)
	PendingInbound(ctx context.Context, q engine.PageQuery) ([]engine.InboundMessage, error)
	FinalizeBatch(ctx context.Context, reqs []engine.FinalizeRequest) ([]engine.FinalizeResult, error)
}

// GroupLoadedMsg carries a group's history, oldest first, its roster's
// size and its messages still waiting, oldest first.
type GroupLoadedMsg struct {
	Group   wire.GroupID
	Entries []engine.GroupEntry
	Members int
	Waiting []engine.InboundMessage
	Err     error
}

// Group is the view of one group's timeline. It holds the newest
// MaxLoaded messages and at most MaxWaiting waiting from each member.
type Group struct {
	src     GroupSource
	ctx     context.Context
	th      themes.Theme
	keys    KeyMap
	w, h    int
	id      wire.GroupID
	name    string
	members int
	names   map[engine.Address]string
	entries []engine.GroupEntry
	waiting []engine.InboundMessage
	open    bool // the lanes of one's own messages are shown
	err     string
	status  string
	toggle  key.Binding
	loading bool
	again   bool

	onRead   bool                    // the policy commits what is shown
	busy     map[wire.LogicalID]bool // decisions in flight
	fetching map[wire.LogicalID]bool // downloads in flight
	saved    string                  // the last file saved from the group in this run
	discard  bool                    // x asked once: y discards
	previews *previews               // the pictures downloaded in this run (preview.go)

	self     engine.Address     // this device (its reactions read "you")
	pick     picker             // the reaction picker (groupaction.go)
	deleting *engine.GroupEntry // D asked once: y deletes it for everyone
}

// NewGroup returns the view reading from src; ctx bounds its reads.
func NewGroup(ctx context.Context, src GroupSource, th themes.Theme) Group {
	return Group{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(),
		toggle: key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "lanes")),
		busy:   map[wire.LogicalID]bool{}, fetching: map[wire.LogicalID]bool{}, previews: &previews{}}
}

// SetSource replaces the source (after a profile was reopened).
func (g *Group) SetSource(src GroupSource) {
	g.src = src
	g.loading, g.again = false, false
	g.busy, g.fetching = map[wire.LogicalID]bool{}, map[wire.LogicalID]bool{}
}

// Toggle is the key that opens and closes the lanes, for the help line.
func (g Group) Toggle() key.Binding { return g.toggle }

// KeyMap is the view's keys that apply now, for the help line.
func (g Group) KeyMap() GroupKeys {
	k := g.keys
	_, waiting := g.firstWaiting()
	k.Commit.SetEnabled(waiting && !g.onRead)
	k.Discard.SetEnabled(waiting)
	_, _, file := g.firstFile()
	k.Download.SetEnabled(file)
	k.Open.SetEnabled(g.saved != "")
	k.Confirm.SetEnabled(g.discard || g.deleting != nil)
	if g.deleting != nil {
		k.Confirm.SetHelp("y", "yes, delete it for everyone")
	}
	return GroupKeys{Toggle: g.toggle, Commit: k.Commit, Discard: k.Discard, Confirm: k.Confirm, Download: k.Download, Open: k.Open,
		Reply: k.Reply, React: k.React, Edit: k.Edit, Delete: k.Delete, Versions: k.Versions}
}

// GroupKeys are the group view's keys.
type GroupKeys struct {
	Toggle, Commit, Discard, Confirm, Download, Open key.Binding
	Reply, React, Edit, Delete, Versions             key.Binding
}

// ShortHelp implements help.KeyMap.
func (k GroupKeys) ShortHelp() []key.Binding {
	if k.Confirm.Enabled() {
		return []key.Binding{k.Confirm}
	}
	return []key.Binding{k.Commit, k.Discard, k.Download, k.Open, k.Toggle}
}

// FullHelp implements help.KeyMap.
func (k GroupKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Commit, k.Discard, k.Confirm}, {k.Download, k.Open}, {k.Reply, k.React, k.Edit, k.Delete, k.Versions}, {k.Toggle}}
}

// SetSize sets the view's size in cells, title included.
func (g *Group) SetSize(w, h int) { g.w, g.h = w, h }

// SetNames sets the names shown for members.
func (g *Group) SetNames(names map[engine.Address]string) { g.names = names }

// SetCommitOnRead says whether the policy commits what the view shows.
func (g *Group) SetCommitOnRead(on bool) { g.onRead = on }

// SetGroup shows group id, named name, and reads its history.
func (g *Group) SetGroup(id wire.GroupID, name string) tea.Cmd {
	if id != g.id {
		g.entries, g.waiting, g.err, g.status, g.saved, g.members = nil, nil, "", "", "", 0
		g.loading, g.again, g.discard = false, false, false
		g.pick, g.deleting = picker{}, nil
	}
	g.id, g.name = id, name
	return g.Reload()
}

// Waiting returns the group's messages waiting for a decision, oldest
// first.
func (g Group) Waiting() []engine.InboundMessage { return g.waiting }

// Reload reads the history, the roster and the waiting messages again;
// calls while a read is in flight coalesce into one more read after it.
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
				break
			}
			after = page[len(page)-1].Seq
		}
		msg := GroupLoadedMsg{Group: id, Entries: all}
		info, err := src.Group(ctx, id)
		if err != nil {
			msg.Err = err
			return msg
		}
		msg.Members = len(info.Roster.Members)
		// A group message waits with its sender's pending messages: each
		// member's are read and the group's kept.
		for _, mem := range info.Roster.Members {
			a, err := engine.ParseAddress(mem.Address)
			if err != nil {
				continue
			}
			ws, err := src.PendingInbound(ctx, engine.PageQuery{Peer: &a, Limit: MaxWaiting})
			if err != nil {
				msg.Err = err
				return msg
			}
			for _, w := range ws {
				if w.Group != nil && *w.Group == id {
					msg.Waiting = append(msg.Waiting, w)
				}
			}
		}
		sort.SliceStable(msg.Waiting, func(i, j int) bool { return msg.Waiting[i].Seq < msg.Waiting[j].Seq })
		return msg
	}
}

// Update handles the view's reads and decisions, its keys and the engine
// events that touch the group.
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
			g.err, g.entries, g.members, g.waiting = "", msg.Entries, msg.Members, msg.Waiting
		}
		if g.again {
			g.again = false
			return g, g.Reload()
		}
	case FinalizedMsg:
		for _, r := range msg.Reqs {
			delete(g.busy, r.ID)
		}
		if msg.Group != nil && *msg.Group == g.id {
			return g, g.Reload()
		}
	case FetchedMsg:
		if !g.fetching[msg.ID] {
			return g, nil
		}
		delete(g.fetching, msg.ID)
		g.status = fetchStatus(msg)
		if msg.Err == nil {
			g.saved = msg.Path
			g.previews.add(msg.ID, msg.Preview)
		}
		return g, g.Reload()
	case OpenedMsg:
		if msg.Err != nil && msg.Path == g.saved {
			g.status = "open_failed: " + msg.Err.Error()
		}
	case engine.Event:
		return g, g.Reload()
	case tea.KeyMsg:
		return g.key(msg)
	}
	return g, nil
}

func (g Group) key(k tea.KeyMsg) (Group, tea.Cmd) {
	if g.pick.on {
		return g.pickKey(k)
	}
	if g.deleting != nil {
		return g.confirmDelete(k)
	}
	if g2, cmd, ok := g.actionKey(k); ok {
		return g2, cmd
	}
	if g.discard {
		g.discard, g.status = false, ""
		if input.Matches(k, g.keys.Confirm) {
			if w, ok := g.firstWaiting(); ok {
				return g, g.finalize([]engine.InboundMessage{w}, engine.OutcomeDiscarded, false)
			}
			return g, nil
		}
	}
	switch {
	case input.Matches(k, g.toggle):
		g.open = !g.open
	case input.Matches(k, g.keys.Commit) && !g.onRead:
		if w, ok := g.firstWaiting(); ok {
			if f, file := fileOf(&w); file {
				return g, g.fetch(w, f) // a file is committed by downloading it
			}
			return g, g.finalize([]engine.InboundMessage{w}, engine.OutcomeCommitted, false)
		}
	case input.Matches(k, g.keys.Download):
		if w, f, ok := g.firstFile(); ok {
			return g, g.fetch(w, f)
		}
	case input.Matches(k, g.keys.Open):
		if g.saved == "" {
			g.status = "no file saved from this group yet: d downloads the oldest waiting one"
			return g, nil
		}
		path := g.saved
		return g, func() tea.Msg { return OpenMsg{Path: path} }
	case input.Matches(k, g.keys.Discard):
		if w, ok := g.firstWaiting(); ok {
			g.discard = true
			g.status = fmt.Sprintf("discard %s from %s for good? y discards it, any other key keeps it", layout.Quote(layout.OneLine(g.shown(&w), 24)), g.label(w.Sender))
		}
	}
	return g, nil
}

// firstWaiting is the oldest waiting message no decision or download is in
// flight for: the one c and x act on.
func (g Group) firstWaiting() (engine.InboundMessage, bool) {
	for _, w := range g.waiting {
		if !g.busy[w.ID] && !g.fetching[w.ID] {
			return w, true
		}
	}
	return engine.InboundMessage{}, false
}

// firstFile is the oldest waiting file no download is in flight for.
func (g Group) firstFile() (engine.InboundMessage, wire.FileManifest, bool) {
	for i := range g.waiting {
		w := &g.waiting[i]
		if f, ok := fileOf(w); ok && !g.busy[w.ID] && !g.fetching[w.ID] {
			return *w, f, true
		}
	}
	return engine.InboundMessage{}, wire.FileManifest{}, false
}

func (g *Group) fetch(w engine.InboundMessage, f wire.FileManifest) tea.Cmd {
	g.fetching[w.ID] = true
	g.status = fmt.Sprintf("downloading %s (%s)", layout.OneLine([]byte(f.Name), 40), layout.Size(f.Size))
	req := FetchMsg{Sender: w.Sender, ID: w.ID, Name: f.Name, Size: f.Size}
	return func() tea.Msg { return req }
}

// finalize commits or discards ws.
func (g *Group) finalize(ws []engine.InboundMessage, outcome engine.Outcome, auto bool) tea.Cmd {
	var reqs []engine.FinalizeRequest
	for _, w := range ws {
		if !g.busy[w.ID] {
			g.busy[w.ID] = true
			reqs = append(reqs, engine.FinalizeRequest{Sender: w.Sender, ID: w.ID, Outcome: outcome})
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	src, ctx, id := g.src, g.ctx, g.id
	return func() tea.Msg {
		res, err := src.FinalizeBatch(ctx, reqs)
		return FinalizedMsg{Group: &id, Outcome: outcome, Auto: auto, Reqs: reqs, Results: res, Err: err}
	}
}

// CommitShown commits, under the on-read policy, the group's waiting
// messages the view shows (every one: the view shows them all, files
// apart, which only a download commits).
func (g *Group) CommitShown() tea.Cmd {
	if !g.onRead || len(g.waiting) == 0 || g.h <= 1 {
		return nil
	}
	var shown []engine.InboundMessage
	for _, w := range g.waiting {
		if w.Content != wire.ContentFile {
			shown = append(shown, w)
		}
	}
	return g.finalize(shown, engine.OutcomeCommitted, true)
}

func (g Group) label(a engine.Address) string {
	if n := g.names[a]; n != "" {
		return n
	}
	return a.String()
}

// shown is how a waiting message reads.
func (g Group) shown(w *engine.InboundMessage) []byte {
	if f, ok := fileOf(w); ok {
		return fileText(f)
	}
	// An action waiting is said in words, its target found in the group.
	if s, ok := actiontext.Describe(w.Content, w.Body, g.lookup); ok {
		return []byte(s)
	}
	return w.Body
}

// lookup finds a group message among the loaded entries.
func (g Group) lookup(id wire.LogicalID) (engine.HistoryEntry, bool) {
	for i := len(g.entries) - 1; i >= 0; i-- {
		if g.entries[i].ID == id {
			return asHistory(g.entries[i]), true
		}
	}
	return engine.HistoryEntry{}, false
}

// View draws the view at instant now (the matrix says how long a lane has
// waited), newest messages at the bottom.
func (g Group) View(now time.Time, focused bool) string {
	if g.w <= 0 || g.h <= 0 {
		return ""
	}
	st := g.th.Timeline
	type row struct {
		at    time.Time
		lines []string
	}
	indent := strings.Repeat(" ", len("15:04:05")+1)
	var rows []row
	for _, e := range g.entries {
		who := st.Peer.Render(g.label(e.Sender))
		if e.Own {
			who = st.Own.Render("you")
		}
		// A peer's text never drives the terminal: cleaned, on one line.
		body := st.Body.Render(layout.OneLine(layout.Stored(e.Body), max(g.w, 1)*4))
		switch {
		case e.Deleted:
			body = st.More.Render("message deleted")
		case e.Edits > 0:
			body += " " + st.More.Render("edited")
		}
		if e.Imported != nil {
			// History from before this device: it came by a link or a
			// restore, not over a session of this device.
			body += " " + st.More.Render("imported")
		}
		r := row{at: e.At}
		if e.ReplyTo != nil && !e.Deleted {
			r.lines = append(r.lines, indent+st.Time.Render(g.quoteLine(*e.ReplyTo, g.w-len(indent))))
		}
		r.lines = append(r.lines, st.Time.Render(layout.Clock(e.At))+" "+who+" "+body)
		if len(e.Reactions) > 0 && !e.Deleted {
			r.lines = append(r.lines, indent+layout.OneLine([]byte(g.reactionLine(e.Reactions)), max(g.w-len(indent), 1)))
		}
		for _, l := range g.previews.of(e.ID) {
			r.lines = append(r.lines, indent+ansi.Truncate(l, max(g.w-len(indent), 0), ""))
		}
		if e.Own && len(e.Lanes) > 0 {
			r.lines = append(r.lines, indent+st.Accepted.Render(Matrix(e.Lanes, e.At, now, g.label)))
			if g.open {
				for _, l := range Lanes(e.Lanes, g.label) {
					r.lines = append(r.lines, indent+"  "+st.Time.Render(l))
				}
			}
		}
		rows = append(rows, r)
	}
	first, _ := g.firstWaiting()
	fw, _, hasFile := g.firstFile()
	for i := range g.waiting {
		w := &g.waiting[i]
		state := "waiting"
		_, file := fileOf(w)
		switch {
		case g.busy[w.ID]:
			state = "…"
		case g.fetching[w.ID]:
			state = "downloading"
		case file && hasFile && w.ID == fw.ID:
			state += " · d download"
		case !file && w.ID == first.ID && !g.onRead:
			state += " · c commit"
		}
		if w.ID == first.ID && !g.busy[w.ID] && !g.fetching[w.ID] {
			state += " · x discard"
		}
		// The state on the right as in a conversation, or under the body
		// when the row is too narrow for both.
		who := g.label(w.Sender)
		head := st.Time.Render(layout.Clock(w.ReceivedAt)) + " " + st.Peer.Render(who) + " "
		headW := len(indent) + layout.Width(who) + 1
		r := row{at: w.ReceivedAt}
		if bodyW := g.w - headW - layout.Width(state) - 1; bodyW >= 12 {
			body := layout.OneLine(g.shown(w), bodyW)
			r.lines = []string{head + st.Body.Render(body) + layout.Spaces(bodyW-layout.Width(body)+1) + st.Waiting.Render(state)}
		} else {
			r.lines = []string{head + st.Body.Render(layout.OneLine(g.shown(w), max(g.w-headW, 1))), indent + st.Waiting.Render(state)}
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].at.Before(rows[j].at) })
	var lines []string
	for _, r := range rows {
		lines = append(lines, r.lines...)
	}
	var counts []string
	if g.members > 0 {
		counts = append(counts, fmt.Sprintf("%d members", g.members))
	}
	if n := len(g.entries); n > 0 {
		counts = append(counts, fmt.Sprintf("%d shown", n))
	}
	if n := len(g.waiting); n > 0 {
		counts = append(counts, fmt.Sprintf("%d waiting", n))
	}
	detail := strings.Join(counts, " · ")
	head := []string{layout.Title(g.th.Panel.Title, g.th.Panel.TitleFocused, focused, "# "+g.name, detail, g.w)}
	if g.err != "" {
		head = append(head, g.th.Panel.Error.Render(layout.Line(g.err, g.w)))
	}
	if len(rows) == 0 {
		head = append(head, g.th.Panel.Empty.Render(layout.Line(" no messages yet", g.w)))
	}
	var foot []string
	if g.status != "" {
		for _, l := range layout.Wrap(g.status, max(g.w-1, 1)) {
			foot = append(foot, g.th.Panel.Error.Render(layout.Line(" "+strings.TrimRight(l, " "), g.w)))
		}
		foot = foot[:min(len(foot), 3)]
	}
	if room := g.h - len(head) - len(foot); len(lines) > room {
		lines = lines[len(lines)-max(room, 0):]
	}
	if pad := g.h - len(head) - len(lines) - len(foot); pad > 0 && len(foot) > 0 {
		lines = append(lines, make([]string, pad)...)
	}
	return layout.Fit(append(append(head, lines...), foot...), g.w, g.h)
}
