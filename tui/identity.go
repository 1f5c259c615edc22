// What a pane knows of its peers: their names, the safety number with the
// chosen one, and identity changes not accepted yet (which block sending).

package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
)

// identityChange is a peer whose identity changed and is not accepted yet.
type identityChange struct {
	number      string // safety number with the new identity
	fingerprint string
	err         string
}

// loadNames reads the names given to devices.
func (p pane) loadNames() tea.Cmd {
	if p.att == nil {
		return nil
	}
	c, ctx := p.att.Client, p.ctx
	return func() tea.Msg {
		names, err := c.Contacts(ctx)
		return namesMsg{names: names, err: err}
	}
}

// setName names peer ("" forgets its name).
func (p pane) setName(peer engine.Address, name string) tea.Cmd {
	if p.att == nil {
		return nil
	}
	c, ctx := p.att.Client, p.ctx
	return func() tea.Msg {
		return namedMsg{peer: peer, err: c.SetContact(ctx, peer, name)}
	}
}

func (p pane) loadSafety() tea.Cmd {
	if p.att == nil || p.peer.IsZero() {
		return nil
	}
	c, ctx, peer := p.att.Client, p.ctx, p.peer
	return func() tea.Msg {
		n, err := c.Safety(ctx, peer)
		return safetyMsg{peer: peer, number: n.Number, basis: n.Basis, err: err}
	}
}

// markChanged blocks sending to a peer whose identity changed and reads the
// new identity from the relay to show its safety number.
func (p *pane) markChanged(peer engine.Address) tea.Cmd {
	if p.changed[peer] != nil {
		return nil
	}
	p.changed[peer] = &identityChange{}
	p.conv().SetChanged(peer, true)
	p.updateBlocked()
	return p.readNewIdentity(peer)
}

// readNewIdentity reads what the relay's bundle says of peer's identity:
// the safety number and fingerprint shown, which ctrl+t accepts.
func (p *pane) readNewIdentity(peer engine.Address) tea.Cmd {
	if p.att == nil {
		return nil
	}
	c, self, own, ctx := p.att.Client, p.self, p.att.Client.Identity(), p.ctx
	return func() tea.Msg {
		k, err := c.RelayIdentity(ctx, peer)
		if err != nil {
			return newIdentityMsg{peer: peer, err: err}
		}
		return newIdentityMsg{peer: peer, number: engine.SafetyNumber(self, own, peer, k), fingerprint: k.Fingerprint()}
	}
}

// changedHere returns the device of the chosen conversation whose
// identity changed and is not accepted yet: the chosen peer, or for a
// person's conversation another device of theirs (the lowest numbered),
// and whether there is one.
func (p *pane) changedHere() (engine.Address, *identityChange, bool) {
	if ch := p.changed[p.peer]; ch != nil {
		return p.peer, ch, true
	}
	var dev engine.Address
	var found *identityChange
	for a, ch := range p.changed {
		if a.User == p.peer.User && p.conv().Row(a) == p.peer && (found == nil || a.Device < dev.Device) {
			dev, found = a, ch
		}
	}
	return dev, found, found != nil
}

func (p *pane) updateBlocked() {
	reason := ""
	if dev, _, ok := p.changedHere(); ok && p.group == nil {
		reason = fmt.Sprintf("identity_changed: %s has a new identity; sending is blocked until you accept it (ctrl+t)", dev)
	}
	p.comp().SetBlocked(reason)
	p.keys.Accept.SetEnabled(reason != "")
	// The status bar's height changed: the root lays the pane out again
	// after every message.
}

// accept accepts the new identity shown, and only that one: its
// fingerprint goes with the request, and the engine refuses it when the
// relay serves another key by then (fingerprint_mismatch). Nothing is
// accepted before a fingerprint was shown.
func (p pane) accept() tea.Cmd {
	peer, ch, ok := p.changedHere()
	if p.att == nil || !ok {
		return nil
	}
	c, ctx, fp := p.att.Client, p.ctx, ch.fingerprint
	return func() tea.Msg {
		if fp == "" {
			return acceptedMsg{peer: peer, err: fmt.Errorf("no new identity of %s shown yet: %w", peer, engine.ErrFingerprintMismatch)}
		}
		_, err := c.AcceptIdentity(ctx, peer, fp)
		return acceptedMsg{peer: peer, err: err}
	}
}
