package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
)

// TestInterruptedUploadShown: an upload a run left unfinished (cut after
// its first chunk, as a kill leaves it) shows in the transfer strip when
// the profile is opened again, with the key that resumes it; ctrl+r in
// the conversation resumes it, the file reaches bob, and the line goes.
func TestInterruptedUploadShown(t *testing.T) {
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
	src := filepath.Join(t.TempDir(), "holiday-video.mp4")
	if err := os.WriteFile(src, []byte(strings.Repeat("parley ", 20_000)), 0o600); err != nil {
		t.Fatal(err)
	}
	cut, cancel := context.WithCancel(ctx)
	if _, err := alice.SendFile(cut, demoBob, src, func(done, _ int64) {
		if done > 0 {
			cancel()
		}
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut upload: %v", err)
	}

	ap := filePane(t, alice, demoAlice, demoBob, PaneOptions{Compose: true})
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	ap.detach("crashed")
	*ap, _ = ap.Update(msgOf[uploadsMsg](t, ap.attach(&Attachment{Client: alice, Events: make(chan engine.Event), Done: done})))
	if v := ansi.Strip(ap.View()); !strings.Contains(v, "↑ holiday-video.mp4 → bob/1 · interrupted (136.7 KiB) · ctrl+r on bob/1 resumes") {
		t.Fatalf("the interrupted upload is not shown after the reopen:\n%s", v)
	}
	var cmd tea.Cmd
	*ap, cmd = ap.Update(tea.KeyMsg{Type: tea.KeyCtrlR})
	sent := msgOf[fileSentMsg](t, cmd)
	if sent.err != nil {
		t.Fatalf("the resumed upload: %v", sent.err)
	}
	if v := ansi.Strip(ap.View()); strings.Contains(v, "interrupted") {
		t.Fatalf("the upload in flight is still shown interrupted:\n%s", v)
	}
	*ap, cmd = ap.Update(sent)
	*ap, _ = ap.Update(msgOf[uploadsMsg](t, cmd))
	if v := ansi.Strip(ap.View()); strings.Contains(v, "holiday-video.mp4 →") || !strings.Contains(v, "file_sent") {
		t.Fatalf("after the resume the strip still shows the upload, or the events do not say it was sent:\n%s", v)
	}
	if _, err := bob.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := bob.PendingInbound(ctx, engine.PageQuery{Limit: 10})
	if err != nil || len(p) != 1 || p[0].ID != sent.id {
		t.Fatalf("bob's pending: %d, %v; want the file once", len(p), err)
	}
}
