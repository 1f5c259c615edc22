// Files in the conversation: a waiting file message drawn as its name,
// size and type, the key that downloads it and the key that opens what was
// saved. The panel does no I/O: it asks the pane (FetchMsg, OpenMsg), which
// runs the engine's fetch in a command and reports back (FetchedMsg).

package timeline

import (
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/wire"
)

// FetchMsg asks for a waiting file to be downloaded, verified, saved and
// committed (engine.Client.FetchFile).
type FetchMsg struct {
	Sender engine.Address
	ID     wire.LogicalID
	Name   string // as the manifest says, not cleaned
	Size   int64
}

// FetchedMsg reports a download: Path is where the file was saved, Err why
// it was not (or not committed).
type FetchedMsg struct {
	Sender engine.Address
	ID     wire.LogicalID
	Name   string
	Path   string
	Err    error
	// Preview is the saved picture drawn in cells, one string a row
	// (none for a file that is not a picture, or with previews off).
	Preview []string
}

// OpenMsg asks for a saved file to be opened with the system's opener.
type OpenMsg struct{ Path string }

// OpenedMsg reports the opener's start: Err says why the file was not
// handed to it, shown where o was pressed.
type OpenedMsg struct {
	Path string
	Err  error
}

// fileOf is the manifest of a waiting file message.
func fileOf(w *engine.InboundMessage) (wire.FileManifest, bool) {
	if w == nil {
		return wire.FileManifest{}, false
	}
	return engine.FileOf(w.Content, w.Body)
}

// fileText is how a waiting file reads in the conversation; the name and
// type come from the peer and are cleaned when drawn, like a body.
func fileText(f wire.FileManifest) []byte {
	return []byte(fmt.Sprintf("[file] %s · %s · %s", f.Name, layout.Size(f.Size), f.MediaType))
}

// firstFile is the oldest waiting file no download or decision is in
// flight for: the one d downloads.
func (m Model) firstFile() (engine.InboundMessage, wire.FileManifest, bool) {
	for i := range m.waiting {
		w := &m.waiting[i]
		if f, ok := fileOf(w); ok && !m.busy[w.ID] && !m.fetching[w.ID] {
			return *w, f, true
		}
	}
	return engine.InboundMessage{}, wire.FileManifest{}, false
}

// fetch asks for w's file.
func (m *Model) fetch(w engine.InboundMessage, f wire.FileManifest) tea.Cmd {
	m.fetching[w.ID] = true
	m.status = fmt.Sprintf("downloading %s (%s)", layout.OneLine([]byte(f.Name), 40), layout.Size(f.Size))
	m.resizeViewport()
	m.render(m.vp.AtBottom())
	req := FetchMsg{Sender: w.Sender, ID: w.ID, Name: f.Name, Size: f.Size}
	return func() tea.Msg { return req }
}

// fetched takes a download's result: the file's place, or why it failed in
// one line.
func (m Model) fetched(msg FetchedMsg) (Model, tea.Cmd) {
	if !m.fetching[msg.ID] && !m.isWaiting(msg.ID) {
		return m, nil // a download this view did not ask for (a group's)
	}
	delete(m.fetching, msg.ID)
	if msg.Sender != m.peer {
		return m, nil
	}
	if msg.Err == nil {
		m.saved = msg.Path
		m.previews.add(msg.ID, msg.Preview)
	}
	m.status = fetchStatus(msg)
	m.resizeViewport()
	return m, m.Reload()
}

// fetchStatus says where a download was saved, or why it was not.
func fetchStatus(msg FetchedMsg) string {
	name := layout.OneLine([]byte(msg.Name), 40)
	switch {
	case msg.Err == nil:
		return fmt.Sprintf("saved %s as %s · o opens it", name, layout.OneLine([]byte(msg.Path), 80))
	case errors.Is(msg.Err, engine.ErrBlobExpired):
		return fmt.Sprintf("blob_expired: %s is gone from the relay; only x (discard) is left", name)
	}
	return fmt.Sprintf("%s: %s not saved: %s", engine.ErrorName(msg.Err), name, layout.OneLine([]byte(msg.Err.Error()), 120))
}

// open asks for the last file saved from this conversation to be opened.
func (m *Model) open() tea.Cmd {
	if m.saved == "" {
		m.status = "no file saved from this conversation yet: d downloads the oldest waiting one"
		m.resizeViewport()
		return nil
	}
	path := m.saved
	return func() tea.Msg { return OpenMsg{Path: path} }
}

// isWaiting reports whether the conversation shows id waiting.
func (m Model) isWaiting(id wire.LogicalID) bool {
	for _, w := range m.waiting {
		if w.ID == id {
			return true
		}
	}
	return false
}
