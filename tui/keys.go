package tui

import (
	"github.com/charmbracelet/bubbles/key"
)

// globalKeys work from anywhere.
type globalKeys struct {
	Quit  key.Binding
	Help  key.Binding
	Other key.Binding // the other profile (demo)
	Demo  key.Binding // the demo controls prefix
}

func defaultGlobalKeys(demo bool) globalKeys {
	k := globalKeys{
		Quit:  key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Help:  key.NewBinding(key.WithKeys("f1", "?"), key.WithHelp("f1/?", "more help")),
		Other: key.NewBinding(key.WithKeys("ctrl+o"), key.WithHelp("ctrl+o", "other profile")),
		Demo:  key.NewBinding(key.WithKeys("ctrl+x"), key.WithHelp("ctrl+x", "demo controls")),
	}
	if !demo {
		k.Other.SetEnabled(false)
		k.Demo.SetEnabled(false)
	}
	return k
}

// paneKeys move between a profile's panels and act on the chosen peer.
type paneKeys struct {
	Next   key.Binding
	Prev   key.Binding
	Jump   [panelCount]key.Binding
	Accept key.Binding
	Retry  key.Binding
}

func defaultPaneKeys() paneKeys {
	k := paneKeys{
		Next:   key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next panel")),
		Prev:   key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous panel")),
		Accept: key.NewBinding(key.WithKeys("ctrl+t"), key.WithHelp("ctrl+t", "accept new identity"), key.WithDisabled()),
		Retry:  key.NewBinding(key.WithKeys("ctrl+r"), key.WithHelp("ctrl+r", "retry this peer")),
	}
	for p := panel(0); p < panelCount; p++ {
		d := string(rune('1' + p))
		k.Jump[p] = key.NewBinding(key.WithKeys("alt+"+d), key.WithHelp("alt+"+d, p.String()))
	}
	return k
}

// demoKeys follow the demo prefix (ctrl+x) and act on the focused profile.
type demoKeys struct {
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
	Cancel     key.Binding
}

func defaultDemoKeys() demoKeys {
	b := func(k, help string) key.Binding {
		return key.NewBinding(key.WithKeys(k), key.WithHelp(k, help))
	}
	return demoKeys{
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
		Cancel:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
}

func (k demoKeys) all() []key.Binding {
	return []key.Binding{k.Hold, k.HoldBoth, k.Drop, k.DropAck, k.Crash, k.CrashNext, k.Reopen, k.Reinstall, k.Forget, k.AutoCommit, k.AutoRetry, k.Unplug, k.Cancel}
}

// keyHelp is a help.KeyMap made of bindings gathered at draw time.
type keyHelp struct {
	short []key.Binding
	full  [][]key.Binding
}

func (k keyHelp) ShortHelp() []key.Binding  { return k.short }
func (k keyHelp) FullHelp() [][]key.Binding { return k.full }
