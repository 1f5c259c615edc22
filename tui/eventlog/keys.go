package eventlog

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the event log's keys.
type KeyMap struct {
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	Open     key.Binding
	Close    key.Binding
}

// DefaultKeyMap returns the event log keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "older")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "newer")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "f", " "), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home", "oldest")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end", "newest (follow)")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open the marked event in full")),
		Close:    key.NewBinding(key.WithKeys("esc", "enter"), key.WithHelp("esc", "back to the list")),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Open, k.Close, k.Up, k.Down, k.PageUp, k.Bottom}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down}, {k.PageUp, k.PageDown}, {k.Top, k.Bottom}, {k.Open, k.Close}}
}
