package conversations

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the conversations panel's keys.
type KeyMap struct {
	Up     key.Binding
	Down   key.Binding
	New    key.Binding
	Name   key.Binding // names the chosen device
	Group  key.Binding // opens the group command line
	Add    key.Binding // confirms the address or name being typed
	Cancel key.Binding
}

// DefaultKeyMap returns the conversations keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous")),
		Down:   key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next")),
		New:    key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "new conversation")),
		Name:   key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "name it")),
		Group:  key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "group create/add/remove")),
		Add:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "done"), key.WithDisabled()),
		Cancel: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"), key.WithDisabled()),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.New, k.Name, k.Group, k.Add, k.Cancel}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down}, {k.New, k.Name, k.Group, k.Add, k.Cancel}}
}
