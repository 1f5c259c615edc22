package demo

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
)

// demoKeys are the demo's: its prefix, and the controls that follow it and
// act on the focused profile.
type demoKeys struct {
	Prefix     key.Binding
	Hold       key.Binding
	HoldBoth   key.Binding
	Drop       key.Binding
	DropAck    key.Binding
	Crash      key.Binding
	CrashNext  key.Binding
	Reopen     key.Binding
	Reinstall  key.Binding
	Forget     key.Binding
	AutoCommit key.Binding
	AutoRetry  key.Binding
	Unplug     key.Binding
	Link       key.Binding
	Cancel     key.Binding
}

func defaultDemoKeys() demoKeys {
	b := func(k, help string) key.Binding {
		return key.NewBinding(key.WithKeys(k), key.WithHelp(k, help))
	}
	return demoKeys{
		Prefix:     b("ctrl+x", "demo controls"),
		Hold:       b("h", "hold/release delivery here"),
		HoldBoth:   b("H", "hold/release both (collision)"),
		Drop:       b("d", "lose the next envelope sent"),
		DropAck:    b("a", "lose the next ACK sent"),
		Crash:      b("k", "crash now"),
		CrashNext:  b("K", "crash after the next transition"),
		Reopen:     b("o", "reopen"),
		Reinstall:  b("i", "reinstall (new identity)"),
		Forget:     b("s", "forget both sessions (collide again)"),
		AutoCommit: b("c", "auto-commit on/off"),
		AutoRetry:  b("r", "auto-retry on/off"),
		Unplug:     b("u", "unplug/plug the relay"),
		Link:       b("l", "link a laptop (a second device here)"),
		Cancel:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
}

// all are the controls that follow the prefix, in the help's order, then
// the guided scenarios by their digits, so that the menu ctrl+x opens
// names every one.
func (k demoKeys) all() []key.Binding {
	out := []key.Binding{k.Hold, k.HoldBoth, k.Drop, k.DropAck, k.Crash, k.CrashNext, k.Reopen, k.Reinstall, k.Forget, k.AutoCommit, k.AutoRetry, k.Unplug, k.Link, k.Cancel}
	for i, sc := range scenarios() {
		d := fmt.Sprint(i + 1)
		out = append(out, key.NewBinding(key.WithKeys(d), key.WithHelp(d, "scenario: "+sc.name)))
	}
	return out
}
