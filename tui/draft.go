package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// DraftSource keeps the composer's text across restarts, one draft per
// conversation, sealed in the profile. *engine.Client implements it; a
// PaneSource without it (a test's) keeps drafts in memory only.
type DraftSource interface {
	Drafts(ctx context.Context) (map[engine.Address]string, error)
	SaveDraft(ctx context.Context, peer engine.Address, text string) error
}

var _ DraftSource = (*engine.Client)(nil)

// drainWait bounds how long the end of the program waits for the sends and
// saves it asked for: storing a message takes milliseconds, but a group
// send may still wait on the relay.
const drainWait = 10 * time.Second

// draftsMsg carries the drafts read from the profile.
type draftsMsg struct {
	drafts map[engine.Address]string
	err    error
}

// draftSavedMsg reports a draft written to the profile.
type draftSavedMsg struct {
	peer engine.Address
	err  error
}

// drafts is what a pane knows of its drafts: the text of each conversation
// (the chosen one's lives in the composer) and what the profile holds.
type drafts struct {
	loaded bool                      // read from the current client
	text   map[engine.Address]string // by conversation, "" for none
	saved  map[engine.Address]string // as last written to the profile
	// groups are the texts written to groups, kept while the program
	// runs (the profile keeps drafts by peer only).
	groups map[wire.GroupID]string
}

// draftSource is the pane's client as a DraftSource, or nil.
func (p *pane) draftSource() DraftSource {
	if p.att == nil || p.hooks.NoDrafts {
		return nil
	}
	ds, _ := p.att.Client.(DraftSource)
	return ds
}

// loadDrafts reads the drafts of a client just attached.
func (p *pane) loadDrafts() tea.Cmd {
	p.draft.loaded = false
	ds, ctx := p.draftSource(), p.ctx
	if ds == nil {
		return nil
	}
	return func() tea.Msg {
		d, err := ds.Drafts(ctx)
		return draftsMsg{drafts: d, err: err}
	}
}

// gotDrafts takes the drafts read from the profile; text typed meanwhile
// wins over the stored draft of its conversation.
func (p *pane) gotDrafts(m draftsMsg) {
	if m.err != nil {
		p.noteErr(engine.ErrorName(m.err), m.err, "reading the drafts")
		return
	}
	p.draft.loaded = true
	p.draft.saved = m.drafts
	if p.draft.saved == nil {
		p.draft.saved = map[engine.Address]string{}
	}
	if p.draft.text == nil {
		p.draft.text = map[engine.Address]string{}
	}
	for peer, t := range m.drafts {
		if p.draft.text[peer] == "" {
			p.draft.text[peer] = t
		}
	}
	if !p.peer.IsZero() && p.comp().Value() == "" && p.draft.text[p.peer] != "" {
		p.comp().SetValue(p.draft.text[p.peer])
	}
}

// switchDraft keeps the composer's text as the draft of the conversation
// left and brings back the draft of the one chosen.
func (p *pane) switchDraft(from, to engine.Address) {
	if p.draft.text == nil {
		p.draft.text = map[engine.Address]string{}
	}
	if !from.IsZero() {
		p.draft.text[from] = p.comp().Value()
	}
	p.comp().SetValue(p.draft.text[to])
}

// changedDrafts returns the drafts that differ from what the profile
// holds, marked as saved.
func (p *pane) changedDrafts() map[engine.Address]string {
	if !p.draft.loaded {
		return nil // a save now could replace a draft not read yet
	}
	if !p.peer.IsZero() && p.group == nil {
		p.draft.text[p.peer] = p.comp().Value()
	}
	var out map[engine.Address]string
	for peer, t := range p.draft.text {
		if p.draft.saved[peer] == t {
			continue
		}
		if out == nil {
			out = map[engine.Address]string{}
		}
		out[peer] = t
		p.draft.saved[peer] = t
	}
	return out
}

// saveDrafts writes the drafts that changed since the last save (on each
// tick: a crash loses at most a second of typing).
func (p *pane) saveDrafts() tea.Cmd {
	ds, ctx := p.draftSource(), p.ctx
	if ds == nil {
		return nil
	}
	var cmds []tea.Cmd
	for peer, t := range p.changedDrafts() {
		// On the composer's line: after the sends entered before this
		// save, before those entered after it.
		cmds = append(cmds, p.comp().Line().Cmd(nil, func() tea.Msg { return draftSavedMsg{peer: peer, err: ds.SaveDraft(ctx, peer, t)} }))
	}
	return tea.Batch(cmds...)
}

// keepQueued moves the messages queued in the composer (not handed to the
// engine yet) into their conversations' drafts, after what is there: a
// quit that does not wait for them keeps their text.
func (p *pane) keepQueued() {
	peers, groups, bodies := p.comp().TakeQueued()
	if p.draft.text == nil {
		p.draft.text = map[engine.Address]string{}
	}
	for i, peer := range peers {
		if groups[i] != nil {
			p.keepQueuedGroup(*groups[i], bodies[i])
			continue
		}
		t := p.draft.text[peer]
		if peer == p.peer && p.group == nil {
			t = p.comp().Value()
		}
		t = strings.TrimLeft(t+"\n"+string(bodies[i]), "\n")
		p.draft.text[peer] = t
		if peer == p.peer && p.group == nil {
			p.comp().SetValue(t)
		}
	}
}

// keepsDrafts reports whether every pane's profile keeps drafts, so that a
// quit loses no text.
func (m Model) keepsDrafts() bool {
	for i := range m.panes {
		if m.panes[i].draftSource() == nil {
			return false
		}
	}
	return len(m.panes) > 0
}

// SaveDrafts writes every pane's changed drafts to its profile now, as the
// program ends (Run does it after the last frame; the tick does it while
// it runs).
func (m *Model) SaveDrafts(ctx context.Context) error {
	var errs []error
	for i := range m.panes {
		p := &m.panes[i]
		ds := p.draftSource()
		if ds == nil {
			continue
		}
		// What the program asked for and did not see done (a send, a
		// save) is done first, in its order, so that the saves below come
		// last.
		dctx, cancel := context.WithTimeout(ctx, drainWait)
		if err := p.comp().Line().Drain(dctx); err != nil {
			errs = append(errs, fmt.Errorf("finish the sends and saves in flight: %w", err))
		}
		cancel()
		if !p.draft.loaded {
			// The program ended before the stored drafts were read: read
			// them now, so that what was typed is kept and a stored draft
			// of another conversation is not replaced unseen.
			d, err := ds.Drafts(ctx)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			p.gotDrafts(draftsMsg{drafts: d})
		}
		for peer, t := range p.changedDrafts() {
			if err := ds.SaveDraft(ctx, peer, t); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
