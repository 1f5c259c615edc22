package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/timeline"
)

// TestSendShowsNewest: after a search has scrolled the conversation back
// to an old message, a message sent from the composer is on screen once
// stored: the timeline goes to its newest entry.
func TestSendShowsNewest(t *testing.T) {
	ctx := context.Background()
	net := enginetest.NewNetwork()
	blobs, err := enginetest.NewBlobs(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := openFileClient(t, net, blobs, demoAlice), openFileClient(t, net, blobs, demoBob)
	for _, c := range []*engine.Client{alice, bob} {
		if err := c.RefreshPreKeys(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		body := fmt.Sprintf("message %d", i)
		if i == 0 {
			body = "the needle, long ago"
		}
		if _, err := alice.Send(ctx, demoBob, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	ap := filePane(t, alice, demoAlice, demoBob, PaneOptions{Compose: true})
	key := func(k tea.KeyMsg) tea.Cmd {
		var cmd tea.Cmd
		*ap, cmd = ap.Update(k)
		return cmd
	}
	text := func(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
	key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'2'}, Alt: true})
	key(text("/"))
	key(text("needle"))
	key(tea.KeyMsg{Type: tea.KeyEnter})
	if v := ansi.Strip(ap.View()); !strings.Contains(v, "the needle, long ago") || strings.Contains(v, "message 39") {
		t.Fatalf("the search did not scroll back to the old message:\n%s", v)
	}
	key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'3'}, Alt: true})
	key(text("just sent"))
	sent := msgOf[composer.SentMsg](t, key(tea.KeyMsg{Type: tea.KeyEnter}))
	if sent.Err != nil {
		t.Fatal(sent.Err)
	}
	*ap, _ = ap.Update(sent)
	*ap, _ = ap.Update(msgOf[timeline.LoadedMsg](t, ap.tl().Reload())) // the read the engine's event starts
	if v := ansi.Strip(ap.View()); !strings.Contains(v, "just sent") {
		t.Fatalf("the message just sent is not on screen:\n%s", v)
	}
}
