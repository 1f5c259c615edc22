package tui

import (
	"errors"
	"reflect"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
)

// TestAcceptCarriesTheFingerprintShown: ctrl+t accepts the identity whose
// safety number the pane showed, by its fingerprint, and not whatever the
// relay serves when the key is pressed; before anything was shown, it
// accepts nothing.
func TestAcceptCarriesTheFingerprintShown(t *testing.T) {
	m, fc, _ := newTestRoot(t)
	ctrlT := tea.KeyMsg{Type: tea.KeyCtrlT}
	shown := engine.IdentityKey{SigningKey: [32]byte{1}, DHKey: [32]byte{2}}
	fc.relayKey = shown
	read := m.panes[0].markChanged(demoBob)

	// Nothing shown yet: refused, nothing asked of the engine.
	_, cmd := update(m, ctrlT)
	if msg := accepted(t, cmd); !errors.Is(msg.err, engine.ErrFingerprintMismatch) || len(fc.accepted) != 0 {
		t.Fatalf("ctrl+t before the new identity was shown: %v, asked %q; want refused, nothing asked", msg.err, fc.accepted)
	}

	m.panes[0], _ = m.panes[0].Update(read())
	if got := m.panes[0].changed[demoBob].fingerprint; got != shown.Fingerprint() {
		t.Fatalf("shown fingerprint %q, want %q", got, shown.Fingerprint())
	}
	fc.relayKey = engine.IdentityKey{SigningKey: [32]byte{9}, DHKey: [32]byte{9}} // the relay swaps keys
	_, cmd = update(m, ctrlT)
	if msg := accepted(t, cmd); msg.err != nil || !reflect.DeepEqual(fc.accepted, []string{shown.Fingerprint()}) {
		t.Fatalf("ctrl+t: %v, asked to pin %q; want the fingerprint shown, %q", msg.err, fc.accepted, shown.Fingerprint())
	}
}

// accepted runs cmd and returns the acceptedMsg it produces.
func accepted(t *testing.T, cmd tea.Cmd) acceptedMsg {
	t.Helper()
	var find func(tea.Msg) (acceptedMsg, bool)
	find = func(msg tea.Msg) (acceptedMsg, bool) {
		switch msg := msg.(type) {
		case acceptedMsg:
			return msg, true
		case paneMsg:
			return find(msg.msg)
		case tea.BatchMsg:
			for _, c := range msg {
				if c != nil {
					if a, ok := find(c()); ok {
						return a, true
					}
				}
			}
		}
		return acceptedMsg{}, false
	}
	if cmd != nil {
		if a, ok := find(cmd()); ok {
			return a
		}
	}
	t.Fatal("ctrl+t produced no accept")
	return acceptedMsg{}
}
