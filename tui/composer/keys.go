package composer

import "github.com/charmbracelet/bubbles/key"

// KeyMap is the composer's own keys; the text editing keys are the
// textarea's (ctrl+a/e line start/end, ctrl+w/alt+backspace delete a word,
// ctrl+k/ctrl+u delete to the end/start of the line...).
type KeyMap struct {
	Send    key.Binding
	Newline key.Binding
}

// DefaultKeyMap returns the composer keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Send:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "send")),
		Newline: key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"), key.WithHelp("alt+enter/ctrl+j", "new line")),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding { return []key.Binding{k.Send, k.Newline} }

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding { return [][]key.Binding{{k.Send, k.Newline}} }
