package tui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/wire"
)

// openFileClient is openTestClient with files: a blob store shared by the
// network's clients and small chunks.
func openFileClient(t *testing.T, net *enginetest.Network, blobs *enginetest.Blobs, addr engine.Address) *engine.Client {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), addr.User)
	st, err := store.Create(ctx, dir, demoPassphrase, store.Options{KDF: demoKDF, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.CreateProfile(ctx, st, addr, "memory://", nil, testNow); err != nil {
		t.Fatal(err)
	}
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: net.Endpoint(addr), Now: fixedClock,
		Files: engine.FileConfig{Dir: filepath.Join(dir, "files"), ChunkSize: wire.MinFileChunkSize, Blobs: blobs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); st.Close() })
	return c
}

// filePane is a pane on c, sized, with its conversation with peer chosen.
func filePane(t *testing.T, c *engine.Client, self, peer engine.Address, o PaneOptions) *pane {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	m := New(context.Background(), themes.MustGet("dark"), discard, fixedClock)
	p := &m.panes[m.AddPane(self, &Attachment{Client: c, Events: make(chan engine.Event), Done: done}, o)]
	p.draft.loaded, p.draft.saved = true, map[engine.Address]string{}
	p.setActive(true)
	p.SetSize(120, 40)
	var cmd tea.Cmd
	*p, cmd = p.Update(conversations.SelectedMsg{Peer: peer})
	*p, _ = p.Update(msgOf[timeline.LoadedMsg](t, cmd))
	return p
}

// TestFileThroughPanes: alice attaches a file from the composer (tab
// completes its name), the upload shows in the transfer strip while it
// runs, bob's conversation shows it waiting with its name and size, d
// downloads it into bob's downloads directory with a progress line, the
// engine commits it, and o hands the saved file to the opener (here one
// that does not exist: the pane says so).
func TestFileThroughPanes(t *testing.T) {
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
	src := filepath.Join(t.TempDir(), "holiday-photos.tar")
	data := bytes.Repeat([]byte("parley files "), 40_000)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ap := filePane(t, alice, demoAlice, demoBob, PaneOptions{Compose: true})
	ap.comp().SetValue(composer.AttachPrefix + filepath.Join(filepath.Dir(src), "holi"))
	*ap, _ = ap.Update(msgOf[composer.CompletedMsg](t, func() tea.Msg { _, c := ap.key(tea.KeyMsg{Type: tea.KeyTab}); return c() }))
	if got, want := ap.comp().Value(), composer.AttachPrefix+src; got != want {
		t.Fatalf("tab completed to %q, want %q", got, want)
	}
	var cmd tea.Cmd
	*ap, cmd = ap.Update(tea.KeyMsg{Type: tea.KeyEnter})
	*ap, cmd = ap.Update(msgOf[composer.AttachMsg](t, cmd))
	if got := ansi.Strip(ap.View()); !strings.Contains(got, "↑ holiday-photos.tar → bob/1") {
		t.Fatalf("the upload has no line in the strip:\n%s", got)
	}
	sent := msgOf[fileSentMsg](t, cmd)
	if sent.err != nil {
		t.Fatalf("attach: %v", sent.err)
	}
	*ap, _ = ap.Update(sent)
	if got := ansi.Strip(ap.View()); strings.Contains(got, "holiday-photos.tar →") || !strings.Contains(got, "file_sent") {
		t.Fatalf("after the upload the strip still shows it or the events do not say it was sent:\n%s", got)
	}

	if _, err := bob.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	downloads := filepath.Join(t.TempDir(), "dl")
	bp := filePane(t, bob, demoBob, demoAlice, PaneOptions{Downloads: downloads, Opener: "parley-no-such-opener"})
	if got := ansi.Strip(bp.View()); !strings.Contains(got, "[file] holiday-photos.tar · 507.8 KiB ·") || !strings.Contains(got, "application/x-tar") {
		t.Fatalf("bob's conversation does not show the file waiting:\n%s", got)
	}
	*bp, _ = bp.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'2'}, Alt: true})
	*bp, cmd = bp.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'d'}})
	*bp, cmd = bp.Update(msgOf[timeline.FetchMsg](t, cmd))
	if got := ansi.Strip(bp.View()); !strings.Contains(got, "↓ holiday-photos.tar ← alice/1") {
		t.Fatalf("the download has no line in the strip:\n%s", got)
	}
	done := msgOf[fetchDoneMsg](t, cmd)
	if done.res.Err != nil {
		t.Fatalf("fetch: %v", done.res.Err)
	}
	bp.xfer.Sync() // as the tick does: nothing left to read
	*bp, cmd = bp.Update(done)
	*bp, _ = bp.Update(msgOf[timeline.LoadedMsg](t, cmd))
	got, err := os.ReadFile(filepath.Join(downloads, "holiday-photos.tar"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved file: %d bytes, %v; want the %d sent", len(got), err, len(data))
	}
	if v := ansi.Strip(bp.View()); !strings.Contains(v, "file_saved") || !strings.Contains(v, "o opens it") || strings.Contains(v, "↓ holiday") ||
		strings.Contains(v, "waiting") || !strings.Contains(v, "[file] holiday-photos.tar · 507.8 KiB · application/x-tar") {
		t.Fatalf("after the download:\n%s", v)
	}
	if n, err := bob.PendingInbound(ctx, engine.PageQuery{Limit: 10}); err != nil || len(n) != 0 {
		t.Fatalf("bob still has %d pending (%v): the fetch did not commit", len(n), err)
	}
	*bp, cmd = bp.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'o'}})
	*bp, cmd = bp.Update(msgOf[timeline.OpenMsg](t, cmd))
	*bp, _ = bp.Update(msgOf[openedMsg](t, cmd))
	if v := ansi.Strip(bp.View()); !strings.Contains(v, "no parley-no-such-opener on this system") {
		t.Fatalf("a missing opener is not reported:\n%s", v)
	}
	// ...where o was pressed too, not only in the events.
	if v := ansi.Strip(bp.tl().View()); !strings.Contains(v, "open_failed: no parley-no-such-opener on this system") {
		t.Fatalf("the conversation does not say that opening failed:\n%s", v)
	}
}

// TestAttachToGroup: with a group chosen, a /file line sends the file to
// the group (SendGroupFile): each member holds one file message from
// alice, waiting in the group's view (not in alice's conversation), where
// d downloads it.
func TestAttachToGroup(t *testing.T) {
	ctx := context.Background()
	net := enginetest.NewNetwork()
	blobs, err := enginetest.NewBlobs(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, carol := openFileClient(t, net, blobs, demoAlice), openFileClient(t, net, blobs, demoBob), openFileClient(t, net, blobs, demoCarol)
	for _, c := range []*engine.Client{alice, bob, carol} {
		if err := c.RefreshPreKeys(ctx); err != nil {
			t.Fatal(err)
		}
	}
	team, _, err := alice.CreateGroup(ctx, "team", []engine.Address{demoBob, demoCarol})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*engine.Client{bob, carol} { // they learn the group
		if _, err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(t.TempDir(), "minutes.txt")
	if err := os.WriteFile(src, []byte("the team's minutes"), 0o600); err != nil {
		t.Fatal(err)
	}
	ap := filePane(t, alice, demoAlice, demoBob, PaneOptions{Compose: true})
	*ap, _ = ap.Update(conversations.SelectedMsg{Peer: demoBob, Group: &team.ID, Name: "team"})
	ap.comp().SetValue(composer.AttachPrefix + src)
	var cmd tea.Cmd
	*ap, cmd = ap.Update(tea.KeyMsg{Type: tea.KeyEnter})
	attach := msgOf[composer.AttachMsg](t, cmd)
	if attach.Group == nil || *attach.Group != team.ID {
		t.Fatalf("the /file line went to %+v, want #team", attach)
	}
	*ap, cmd = ap.Update(attach)
	if got := ansi.Strip(ap.View()); !strings.Contains(got, "↑ minutes.txt → #team") {
		t.Fatalf("the upload to the group has no line in the strip:\n%s", got)
	}
	sent := msgOf[fileSentMsg](t, cmd)
	if sent.err != nil {
		t.Fatalf("attach to the group: %v", sent.err)
	}
	for _, c := range []*engine.Client{bob, carol} {
		if _, err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := c.PendingInbound(ctx, engine.PageQuery{Peer: &demoAlice, Limit: 10})
		if err != nil || len(p) != 1 || p[0].ID != sent.id {
			t.Fatalf("%s's pending from alice: %d, %v; want the file once", c.Self(), len(p), err)
		}
		if f, ok := engine.FileOf(p[0].Content, p[0].Body); !ok || f.Name != "minutes.txt" {
			t.Fatalf("%s's pending message is not the file: %+v", c.Self(), f)
		}
	}
	bp := filePane(t, bob, demoBob, demoAlice, PaneOptions{Downloads: filepath.Join(t.TempDir(), "dl")})
	if v := ansi.Strip(bp.View()); strings.Contains(v, "minutes.txt") {
		t.Fatalf("the group's file waits in bob's conversation with alice:\n%s", v)
	}
	*bp, cmd = bp.Update(conversations.SelectedMsg{Peer: demoAlice, Group: &team.ID, Name: "team"})
	*bp, _ = bp.Update(msgOf[timeline.GroupLoadedMsg](t, cmd))
	if v := ansi.Strip(bp.View()); !strings.Contains(v, "alice/1 [file] minutes.txt · 18 B · text/plain") || !strings.Contains(v, "waiting · d download · x discard") {
		t.Fatalf("the group's view does not show the file waiting:\n%s", v)
	}
	*bp, _ = bp.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'2'}, Alt: true})
	*bp, cmd = bp.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'d'}})
	if f := msgOf[timeline.FetchMsg](t, cmd); f.ID != sent.id {
		t.Fatalf("d in the group's view asked for %+v, want the file", f)
	}
}
