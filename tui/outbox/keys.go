package outbox

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the outbox keys.
type KeyMap struct {
	Up         key.Binding
	Down       key.Binding
	NextPage   key.Binding
	PrevPage   key.Binding
	Retry      key.Binding
	RetryAll   key.Binding
	Abandon    key.Binding
	AbandonAll key.Binding
	Life       key.Binding
	Confirm    key.Binding
	Cancel     key.Binding
}

// DefaultKeyMap returns the outbox keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next")),
		NextPage:   key.NewBinding(key.WithKeys("pgdown", "right", "l"), key.WithHelp("pgdn", "next page")),
		PrevPage:   key.NewBinding(key.WithKeys("pgup", "left", "h"), key.WithHelp("pgup", "previous page")),
		Retry:      key.NewBinding(key.WithKeys("r", "enter"), key.WithHelp("r", "retry this peer")),
		RetryAll:   key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "retry all peers")),
		Abandon:    key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "abandon (asks)")),
		AbandonAll: key.NewBinding(key.WithKeys("X"), key.WithHelp("X", "abandon all (asks)")),
		Life:       key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "its life")),
		Confirm:    key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes"), key.WithDisabled()),
		Cancel:     key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "no"), key.WithDisabled()),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	if k.Confirm.Enabled() {
		return []key.Binding{k.Confirm, k.Cancel}
	}
	return []key.Binding{k.Retry, k.RetryAll, k.Abandon, k.AbandonAll, k.Life, k.NextPage}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.NextPage, k.PrevPage}, {k.Retry, k.RetryAll}, {k.Abandon, k.AbandonAll, k.Confirm, k.Cancel}, {k.Life}}
}
