package tui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

func TestSmoke(t *testing.T) {
	d := startDemo(t, demoConfig{})
	d.waitFor("Composer → bob/1")
	d.send("hello bob")
	d.waitFor("1 pending received")
	d.key(tea.KeyCtrlO)
	d.alt('4')
	d.typeText("c")
	d.waitFor("acknowledged")
	s := d.settle()
	t.Log("\n" + s)
}
