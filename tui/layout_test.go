package tui

import (
	"context"
	"fmt"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
)

// newChatRoot is parley tui's root (chat first) on a fake client, at w×h,
// with the keyboard in the composer to bob/1.
func newChatRoot(t *testing.T, w, h int) Model {
	t.Helper()
	fc := &fakeClient{self: demoAlice, events: make(chan engine.Event, 8)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	a := &Attachment{Client: fc, Events: fc.events, Notes: make(chan eventlogEntry), Done: done, State: func() string { return "connected" }}
	m := New(context.Background(), themes.MustGet("dark"), discard, fixedClock)
	p := &m.panes[m.AddPane(demoAlice, a, PaneOptions{Compose: true, ChatFirst: true})]
	p.conv().Select(demoBob)
	p.selectPeer(demoBob)
	m.panes[0].setActive(true)
	m, _ = update(m, tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// TestChatLayout: parley tui gives the conversation the room at ordinary
// sizes (at 110x32 the timeline had 10 rows, the inbox, outbox and events
// half the screen): the timeline takes all but the status bar, the
// composer and the help, and the other panels are a key away, counted in
// the status bar. From about 46 rows every panel shows. Golden screens
// (go test ./tui -run TestChatLayout -update).
func TestChatLayout(t *testing.T) {
	for _, tc := range []struct {
		w, h    int
		keys    []tea.KeyMsg
		name    string
		minTL   int  // the fewest timeline rows
		compact bool // the inbox, outbox and events a key away
	}{
		{w: 80, h: 24, minTL: 16, compact: true},
		{w: 110, h: 32, minTL: 24, compact: true},
		{w: 120, h: 44, minTL: 36, compact: true},
		{w: 110, h: 32, name: "inbox", keys: []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune{'4'}, Alt: true}}, minTL: 24, compact: true},
		{w: 160, h: 48, minTL: 16},
	} {
		name := fmt.Sprintf("%dx%d", tc.w, tc.h)
		if tc.name != "" {
			name += "_" + tc.name
		}
		t.Run(name, func(t *testing.T) {
			m := newChatRoot(t, tc.w, tc.h)
			for _, k := range tc.keys {
				m, _ = update(m, k)
			}
			l := m.panes[0].lay
			if l.compact != tc.compact || l.topH < tc.minTL {
				t.Fatalf("compact %v with a timeline of %d rows; want compact %v and at least %d", l.compact, l.topH, tc.compact, tc.minTL)
			}
			golden.RequireEqual(t, []byte(m.View()))
		})
	}
}
