package tui

import (
	"github.com/charmbracelet/bubbles/key"
)

// globalKeys work from anywhere.
type globalKeys struct {
	Quit  key.Binding
	Help  key.Binding
	Other key.Binding // the other profile (enabled with a second pane)
	// Prefix is a wrapper's key, shown in the help only: the wrapper
	// handles it before the chat sees it (SetPrefixKey: the demo's ctrl+x).
	Prefix key.Binding
}

func defaultGlobalKeys() globalKeys {
	return globalKeys{
		Quit:   key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Help:   key.NewBinding(key.WithKeys("f1", "?"), key.WithHelp("f1/?", "more help")),
		Other:  key.NewBinding(key.WithKeys("ctrl+o"), key.WithHelp("ctrl+o", "other profile"), key.WithDisabled()),
		Prefix: key.NewBinding(key.WithDisabled()),
	}
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
	for p := panelID(0); p < panelCount; p++ {
		d := string(rune('1' + p))
		k.Jump[p] = key.NewBinding(key.WithKeys("alt+"+d), key.WithHelp("alt+"+d, p.String()))
	}
	return k
}

// keyHelp is a help.KeyMap made of bindings gathered at draw time.
type keyHelp struct {
	short []key.Binding
	full  [][]key.Binding
}

func (k keyHelp) ShortHelp() []key.Binding  { return k.short }
func (k keyHelp) FullHelp() [][]key.Binding { return k.full }
