// Package input decides which key messages are keys. Bubble Tea reads a
// chunk of typed text (a fast typist, a script, a slow link) as one rune
// message per word, and such a message's String() is the word itself:
// "enter", "home", "tab". Only a real key event may match a binding; a
// message of more than one rune, or a paste, is text.
package input

import (
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// IsText reports whether k is typed text rather than one key: a paste, or
// more than one rune read together.
func IsText(k tea.KeyMsg) bool {
	return k.Type == tea.KeyRunes && (k.Paste || len(k.Runes) > 1)
}

// Matches is key.Matches for key events only: text never matches a
// binding, whatever its words.
func Matches(k tea.KeyMsg, b ...key.Binding) bool {
	return !IsText(k) && key.Matches(k, b...)
}

// Insert puts typed text into a one-line input at its cursor: the input's
// own Update would take a word such as "home" for its key.
func Insert(in *textinput.Model, text []rune) {
	v, at := []rune(in.Value()), in.Position()
	v = append(v[:at:at], append(text, v[at:]...)...)
	in.SetValue(string(v))
	in.SetCursor(at + len(text))
}
