package outbox

import (
	"github.com/charmbracelet/bubbles/key"
	"github.com/parley-chat/parley/tui/internal/pagedlist"
)

// KeyMap is the outbox keys.
type KeyMap struct {
	pagedlist.Keys // the cursor, the pages and the answers to a question
	Retry          key.Binding
	RetryAll       key.Binding
	Abandon        key.Binding
	AbandonAll     key.Binding
	Trace          key.Binding
}

// DefaultKeyMap returns the outbox keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Keys:       pagedlist.DefaultKeys(),
		Retry:      key.NewBinding(key.WithKeys("r", "enter"), key.WithHelp("r", "retry this peer")),
		RetryAll:   key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "retry all peers")),
		Abandon:    key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "abandon (asks)")),
		AbandonAll: key.NewBinding(key.WithKeys("X"), key.WithHelp("X", "abandon all (asks)")),
		Trace:      key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "its trace")),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	if k.Confirm.Enabled() {
		return []key.Binding{k.Confirm, k.Cancel}
	}
	return []key.Binding{k.Retry, k.RetryAll, k.Abandon, k.AbandonAll, k.Trace, k.NextPage}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.NextPage, k.PrevPage}, {k.Retry, k.RetryAll}, {k.Abandon, k.AbandonAll, k.Confirm, k.Cancel}, {k.Trace}}
}
