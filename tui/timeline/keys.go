package timeline

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the timeline's keys.
type KeyMap struct {
	Up          key.Binding
	Down        key.Binding
	PageUp      key.Binding
	PageDown    key.Binding
	Top         key.Binding
	Bottom      key.Binding
	Commit      key.Binding
	Discard     key.Binding
	Confirm     key.Binding // y: yes to the question x asked
	Search      key.Binding
	Next        key.Binding
	Prev        key.Binding
	ClearSearch key.Binding
	Trace       key.Binding
	Download    key.Binding
	Open        key.Binding
	Reply       key.Binding
	React       key.Binding
	Edit        key.Binding
	Delete      key.Binding
	Versions    key.Binding
}

// DefaultKeyMap returns the timeline keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:          key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "scroll up")),
		Down:        key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "scroll down")),
		PageUp:      key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("pgup", "page up (loads older)")),
		PageDown:    key.NewBinding(key.WithKeys("pgdown", "f", " "), key.WithHelp("pgdn", "page down")),
		Top:         key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home", "oldest loaded (loads older)")),
		Bottom:      key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end", "newest")),
		Commit:      key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "commit the oldest waiting")),
		Discard:     key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "discard the oldest waiting")),
		Confirm:     key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes, discard it")),
		Search:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		Next:        key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "older match")),
		Prev:        key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "newer match")),
		ClearSearch: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear the search")),
		Trace:       key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "trace of the match (else the newest)")),
		Download:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "download the oldest waiting file")),
		Open:        key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "open the file saved last")),
		Reply:       key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reply")),
		React:       key.NewBinding(key.WithKeys("+"), key.WithHelp("+", "react")),
		Edit:        key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit yours")),
		Delete:      key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "delete yours for everyone")),
		Versions:    key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "versions of an edit")),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	if k.Confirm.Enabled() {
		return []key.Binding{k.Confirm}
	}
	return []key.Binding{k.Commit, k.Discard, k.Download, k.Open, k.Reply, k.React, k.Edit, k.Delete, k.Search, k.Next, k.Prev, k.Trace, k.Up, k.Down, k.PageUp}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down}, {k.PageUp, k.PageDown}, {k.Top, k.Bottom}, {k.Commit, k.Discard, k.Confirm}, {k.Download, k.Open}, {k.Search, k.Next, k.Prev, k.ClearSearch}, {k.Reply, k.React, k.Edit, k.Delete, k.Versions}, {k.Trace}}
}
