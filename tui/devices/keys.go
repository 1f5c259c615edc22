package devices

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the devices panel's keys.
type KeyMap struct {
	Up      key.Binding
	Down    key.Binding
	Remove  key.Binding
	Link    key.Binding // how a new device is linked
	Add     key.Binding // link a new device by its code (with Linking)
	Confirm key.Binding // y: remove, or link, once asked
	Cancel  key.Binding // anything else keeps the device, or links nothing (shown: n/esc)
	Submit  key.Binding // enter: the code is typed
	Back    key.Binding // esc: no code after all
}

// DefaultKeyMap returns the devices panel's keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "previous")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "next")),
		Remove:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "remove (asks)")),
		Link:    key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "how to link one")),
		Add:     key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "link by code")),
		Confirm: key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "remove"), key.WithDisabled()),
		Cancel:  key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "keep"), key.WithDisabled()),
		Submit:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "join its mailbox"), key.WithDisabled()),
		Back:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"), key.WithDisabled()),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	switch {
	case k.Confirm.Enabled():
		return []key.Binding{k.Confirm, k.Cancel}
	case k.Submit.Enabled() || k.Back.Enabled():
		return []key.Binding{k.Submit, k.Back}
	}
	return []key.Binding{k.Remove, k.Add, k.Link}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down}, {k.Remove, k.Add, k.Link, k.Confirm, k.Cancel, k.Submit, k.Back}}
}

// asking enables the answers to the removal question and nothing else.
func (k *KeyMap) asking(on bool) {
	k.Confirm.SetHelp("y", "remove")
	k.Cancel.SetHelp("n/esc", "keep")
	k.Confirm.SetEnabled(on)
	k.Cancel.SetEnabled(on)
	for _, b := range []*key.Binding{&k.Up, &k.Down, &k.Remove, &k.Link, &k.Add} {
		b.SetEnabled(!on)
	}
}

// linking enables, while a link is under way, the keys of its first step
// (the code's input: enter and esc) and nothing of the list.
func (k *KeyMap) linking(on bool) {
	k.Confirm.SetHelp("y", "link")
	k.Cancel.SetHelp("n/esc", "cancel")
	k.Confirm.SetEnabled(false)
	k.Cancel.SetEnabled(false)
	k.Submit.SetEnabled(on)
	k.Back.SetEnabled(on)
	for _, b := range []*key.Binding{&k.Up, &k.Down, &k.Remove, &k.Link, &k.Add} {
		b.SetEnabled(!on)
	}
}
