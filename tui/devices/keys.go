package devices

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the devices panel's keys.
type KeyMap struct {
	Up      key.Binding
	Down    key.Binding
	Remove  key.Binding
	Link    key.Binding
	Confirm key.Binding // y: remove, once asked
	Cancel  key.Binding // anything else keeps the device (shown: n/esc)
}

// DefaultKeyMap returns the devices panel's keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next")),
		Remove:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "remove (asks)")),
		Link:    key.NewBinding(key.WithKeys("l", "a"), key.WithHelp("l", "how to link one")),
		Confirm: key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "remove"), key.WithDisabled()),
		Cancel:  key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "keep"), key.WithDisabled()),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	if k.Confirm.Enabled() {
		return []key.Binding{k.Confirm, k.Cancel}
	}
	return []key.Binding{k.Remove, k.Link}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down}, {k.Remove, k.Link, k.Confirm, k.Cancel}}
}

// asking enables the answers to the removal question and nothing else.
func (k *KeyMap) asking(on bool) {
	k.Confirm.SetEnabled(on)
	k.Cancel.SetEnabled(on)
	for _, b := range []*key.Binding{&k.Up, &k.Down, &k.Remove, &k.Link} {
		b.SetEnabled(!on)
	}
}
