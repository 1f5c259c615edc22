package inbox

import (
	"github.com/charmbracelet/bubbles/key"
	"github.com/parley-chat/parley/tui/internal/pagedlist"
)

// KeyMap is the inbox keys.
type KeyMap struct {
	pagedlist.Keys // the cursor, the pages and the answers to a question
	Commit         key.Binding
	Discard        key.Binding
	CommitAll      key.Binding
	DiscardAll     key.Binding
	Trace          key.Binding
}

// DefaultKeyMap returns the inbox keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Keys:       pagedlist.DefaultKeys(),
		Commit:     key.NewBinding(key.WithKeys("c", "enter"), key.WithHelp("c", "commit")),
		Discard:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "discard")),
		CommitAll:  key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "commit all")),
		DiscardAll: key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "discard all (asks)")),
		Trace:      key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "its trace")),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	if k.Confirm.Enabled() {
		return []key.Binding{k.Confirm, k.Cancel}
	}
	return []key.Binding{k.Commit, k.Discard, k.CommitAll, k.DiscardAll, k.Trace, k.NextPage}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.NextPage, k.PrevPage}, {k.Commit, k.Discard}, {k.CommitAll, k.DiscardAll, k.Confirm, k.Cancel}, {k.Trace}}
}
