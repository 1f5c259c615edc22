package inbox

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the inbox keys.
type KeyMap struct {
	Up         key.Binding
	Down       key.Binding
	NextPage   key.Binding
	PrevPage   key.Binding
	Commit     key.Binding
	Discard    key.Binding
	CommitAll  key.Binding
	DiscardAll key.Binding
	Life       key.Binding
	Confirm    key.Binding
	Cancel     key.Binding
}

// DefaultKeyMap returns the inbox keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next")),
		NextPage:   key.NewBinding(key.WithKeys("pgdown", "right", "l"), key.WithHelp("pgdn", "next page")),
		PrevPage:   key.NewBinding(key.WithKeys("pgup", "left", "h"), key.WithHelp("pgup", "previous page")),
		Commit:     key.NewBinding(key.WithKeys("c", "enter"), key.WithHelp("c", "commit")),
		Discard:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "discard")),
		CommitAll:  key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "commit all")),
		DiscardAll: key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "discard all (asks)")),
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
	return []key.Binding{k.Commit, k.Discard, k.CommitAll, k.DiscardAll, k.Life, k.NextPage}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.NextPage, k.PrevPage}, {k.Commit, k.Discard}, {k.CommitAll, k.DiscardAll, k.Confirm, k.Cancel}, {k.Life}}
}
