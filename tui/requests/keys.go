package requests

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the requests panel's keys.
type KeyMap struct {
	Up      key.Binding
	Down    key.Binding
	Accept  key.Binding
	Reject  key.Binding
	Block   key.Binding
	Confirm key.Binding // y: block, once asked
	Cancel  key.Binding // anything else keeps the request (shown: n/esc)
}

// DefaultKeyMap returns the requests panel's keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next")),
		Accept:  key.NewBinding(key.WithKeys("a", "enter"), key.WithHelp("a", "accept")),
		Reject:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reject")),
		Block:   key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "reject + block (asks)")),
		Confirm: key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "block"), key.WithDisabled()),
		Cancel:  key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "keep"), key.WithDisabled()),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	if k.Confirm.Enabled() {
		return []key.Binding{k.Confirm, k.Cancel}
	}
	return []key.Binding{k.Accept, k.Reject, k.Block}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down}, {k.Accept, k.Reject, k.Block, k.Confirm, k.Cancel}}
}

// asking enables the answers to the block question and nothing else.
func (k *KeyMap) asking(on bool) {
	k.Confirm.SetEnabled(on)
	k.Cancel.SetEnabled(on)
	for _, b := range []*key.Binding{&k.Up, &k.Down, &k.Accept, &k.Reject, &k.Block} {
		b.SetEnabled(!on)
	}
}
