package tui

import (
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/wire"
)

// timelinePanel is the timeline's place in a pane: a peer's conversation
// (timeline.Model), or a group's when one is chosen in the conversations
// (timeline.Group). Messages other than keys reach both, so that the one
// not shown stays current.
type timelinePanel struct {
	timeline.Model
	group   timeline.Group
	inGroup bool
	focused bool
	now     func() time.Time
}

var _ panel = (*timelinePanel)(nil)

func newTimelinePanel(m timeline.Model, g timeline.Group, now func() time.Time) *timelinePanel {
	return &timelinePanel{Model: m, group: g, now: now}
}

// setSource gives both views the reopened client; a client without groups
// leaves the group view without a source, and groups are then never
// chosen (the conversations list none).
func (t *timelinePanel) setSource(c PaneSource) {
	t.Model.SetSource(c)
	if gs, ok := c.(timeline.GroupSource); ok {
		t.group.SetSource(gs)
	}
}

// showGroup shows group id; showPeer goes back to the peer's conversation.
func (t *timelinePanel) showGroup(id wire.GroupID, name string) tea.Cmd {
	t.inGroup = true
	return t.group.SetGroup(id, name)
}

func (t *timelinePanel) showPeer() { t.inGroup = false }

// setSelf names this device's address in both views.
func (t *timelinePanel) setSelf(a engine.Address) {
	t.Model.SetSelf(a)
	t.group.SetSelf(a)
}

func (t *timelinePanel) setNames(names map[engine.Address]string) {
	t.Model.SetNames(names)
	t.group.SetNames(names)
}

func (t *timelinePanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	var cmd, gcmd tea.Cmd
	switch msg := msg.(type) {
	case timeline.GroupLoadedMsg:
		t.group, cmd = t.group.Update(msg)
		return t, cmd
	case tea.KeyMsg:
		if t.inGroup {
			t.group, cmd = t.group.Update(msg)
			return t, cmd
		}
	case engine.Event:
		if t.inGroup {
			t.group, gcmd = t.group.Update(msg)
		}
	case timeline.FinalizedMsg, timeline.FetchedMsg, timeline.OpenedMsg:
		// Each view takes the results of what it asked for.
		t.group, gcmd = t.group.Update(msg)
	}
	t.Model, cmd = t.Model.Update(msg)
	return t, tea.Batch(cmd, gcmd)
}

// CommitShown commits, under the on-read policy, what the view in place
// shows waiting.
func (t *timelinePanel) CommitShown() tea.Cmd {
	if t.inGroup {
		return t.group.CommitShown()
	}
	return t.Model.CommitShown()
}

// SetCommitOnRead tells both views whether the policy commits what they
// show.
func (t *timelinePanel) SetCommitOnRead(on bool) {
	t.Model.SetCommitOnRead(on)
	t.group.SetCommitOnRead(on)
}

func (t *timelinePanel) View() string {
	if t.inGroup {
		return t.group.View(t.now(), t.focused)
	}
	return t.Model.View()
}

func (t *timelinePanel) SetSize(w, h int) tea.Cmd {
	t.Model.SetSize(w, h)
	t.group.SetSize(w, h)
	return nil
}

func (t *timelinePanel) Focus() tea.Cmd { t.focused = true; t.Model.Focus(); return nil }

func (t *timelinePanel) Blur() { t.focused = false; t.Model.Blur() }

func (t *timelinePanel) KeyMap() help.KeyMap {
	if t.inGroup {
		return t.group.KeyMap()
	}
	return t.Model.KeyMap()
}
