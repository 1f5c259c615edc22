package timeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

func waitingFile(t *testing.T, id byte, name string) engine.InboundMessage {
	t.Helper()
	body, err := wire.EncodeManifest(wire.FileManifest{Name: name, Size: 20 << 20, MediaType: "application/pdf",
		ChunkSize: wire.MinFileChunkSize, Chunks: wire.FileChunks(20<<20, wire.MinFileChunkSize)})
	if err != nil {
		t.Fatal(err)
	}
	return engine.InboundMessage{Sender: bob, ID: wire.LogicalID{id}, Content: wire.ContentFile, Body: body, ReceivedAt: at}
}

func TestWaitingFileDownloadAndOpen(t *testing.T) {
	h := &history{waiting: []engine.InboundMessage{
		{Sender: bob, ID: wire.LogicalID{1}, Body: []byte("hello"), ReceivedAt: at},
		waitingFile(t, 2, "report.pdf"),
	}}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(100, 10)
	m.Focus()
	m = load(t, m, m.SetPeer(bob))
	v := m.View()
	for _, want := range []string{"[file] report.pdf · 20.0 MiB · application/pdf", "waiting · d download"} {
		if !strings.Contains(v, want) {
			t.Errorf("the conversation lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "\u202e") {
		t.Fatalf("the file's name or type drives the terminal:\n%q", v)
	}
	// o with nothing saved says so; d asks for the file, never commits it.
	m, cmd := m.Update(press("o"))
	if cmd != nil || !strings.Contains(m.View(), "no file saved") {
		t.Fatalf("o with nothing saved: cmd %v, view\n%s", cmd != nil, m.View())
	}
	m, cmd = m.Update(press("d"))
	if cmd == nil {
		t.Fatal("d started nothing")
	}
	req, ok := cmd().(FetchMsg)
	if !ok || req.ID != (wire.LogicalID{2}) || req.Sender != bob || req.Name != "report.pdf" {
		t.Fatalf("d asked %#v, want the fetch of the file from bob", req)
	}
	if len(h.finalized) != 0 {
		t.Fatalf("d finalized %v: a file is committed by its fetch only", h.finalized)
	}
	if v := m.View(); !strings.Contains(v, "downloading") {
		t.Fatalf("the file being fetched is not shown downloading:\n%s", v)
	}
	if _, cmd := m.Update(press("d")); cmd != nil {
		t.Fatal("d fetched the same file twice")
	}
	// A failure is one line; blob_expired leaves only the discard.
	m, _ = m.Update(FetchedMsg{Sender: bob, ID: req.ID, Name: req.Name, Err: errors.New("fetch: " + engine.ErrBlobExpired.Error() + "")})
	if v := m.View(); !strings.Contains(v, "not saved") {
		t.Fatalf("a failed fetch is not reported:\n%s", v)
	}
	m, _ = m.Update(FetchedMsg{Sender: bob, ID: req.ID, Name: req.Name, Err: errors.Join(errors.New("fetch"), engine.ErrBlobExpired)})
	if v := m.View(); !strings.Contains(v, "blob_expired") || !strings.Contains(v, "only x (discard)") {
		t.Fatalf("an expired blob does not say that only the discard is left:\n%s", v)
	}
	m, _ = m.Update(FetchedMsg{Sender: bob, ID: req.ID, Name: req.Name, Path: "/tmp/dl/report.pdf"})
	if v := m.View(); !strings.Contains(v, "saved report.pdf as /tmp/dl/report.pdf · o opens it") {
		t.Fatalf("the saved file's place is not shown:\n%s", v)
	}
	_, cmd = m.Update(press("o"))
	if cmd == nil {
		t.Fatal("o after a save started nothing")
	}
	if got, ok := cmd().(OpenMsg); !ok || got.Path != "/tmp/dl/report.pdf" {
		t.Fatalf("o asked %#v, want the saved file opened", got)
	}
}

func TestCommitOnAFileFetchesIt(t *testing.T) {
	h := &history{waiting: []engine.InboundMessage{waitingFile(t, 3, "a.bin")}}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(100, 10)
	m.Focus()
	m = load(t, m, m.SetPeer(bob))
	_, cmd := m.Update(press("c"))
	if cmd == nil {
		t.Fatal("c on a waiting file started nothing")
	}
	if _, ok := cmd().(FetchMsg); !ok || len(h.finalized) != 0 {
		t.Fatalf("c on a file must fetch it, not commit it (finalized %v)", h.finalized)
	}
	// The on-read policy never commits a file.
	m.SetCommitOnRead(true)
	if cmd := m.CommitShown(); cmd != nil {
		cmd()
	}
	if len(h.finalized) != 0 {
		t.Fatalf("on-read committed a file: %v", h.finalized)
	}
}

// TestPreviewUnderTheSavedPicture: a download that brings a picture draws
// it under its message once committed; one without (not a picture, or
// previews off) draws nothing more.
func TestPreviewUnderTheSavedPicture(t *testing.T) {
	h := &history{waiting: []engine.InboundMessage{waitingFile(t, 4, "cat.png"), waitingFile(t, 5, "notes.pdf")}}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(100, 20)
	m.Focus()
	m = load(t, m, m.SetPeer(bob))
	m, cmd := m.Update(press("d"))
	req := cmd().(FetchMsg)
	// The engine commits what it fetched: the file is history now.
	h.waiting = h.waiting[1:]
	h.entries = append(h.entries, engine.HistoryEntry{Seq: 1, Peer: bob, Direction: engine.DirectionIn, ID: req.ID, At: at, Body: []byte("[file] cat.png")})
	m, cmd = m.Update(FetchedMsg{Sender: bob, ID: req.ID, Name: req.Name, Path: "/tmp/dl/cat.png", Preview: []string{"PIXELS-ROW-1", "PIXELS-ROW-2"}})
	m = load(t, m, cmd)
	v := m.View()
	row := strings.Index(v, "[file] cat.png")
	if row < 0 || !strings.Contains(v[row:], "PIXELS-ROW-1") || !strings.Contains(v[row:], "PIXELS-ROW-2") {
		t.Fatalf("the picture is not drawn under its message:\n%s", v)
	}
	m, cmd = m.Update(press("d"))
	req = cmd().(FetchMsg)
	h.waiting = nil
	h.entries = append(h.entries, engine.HistoryEntry{Seq: 2, Peer: bob, Direction: engine.DirectionIn, ID: req.ID, At: at, Body: []byte("[file] notes.pdf")})
	m, cmd = m.Update(FetchedMsg{Sender: bob, ID: req.ID, Name: req.Name, Path: "/tmp/dl/notes.pdf"})
	m = load(t, m, cmd)
	if v := m.View(); strings.Count(v, "PIXELS-ROW") != 2 {
		t.Fatalf("a file without a picture drew one:\n%s", v)
	}
}
