package demo

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
)

// TestDemoFileResumed plays scenario 8 with a 2 MiB file (32 chunks of
// 64 KiB): bob is killed at 40% of the download with part of it kept in
// his profile, reopened, and the second download resumes from there,
// saves the file byte for byte and commits it; the exactly-once line
// counts it once.
func TestDemoFileResumed(t *testing.T) {
	t.Parallel()
	const size = 2 << 20
	d := startDemo(t, demoConfig{mutate: func(o *Options) { o.FileSize = size }})
	d.waitFor("Composer → bob/1", "exactly once ·")
	if got := scenarios()[7].name; got != "file resumed after a kill" {
		t.Fatalf("scenario 8 is %q", got)
	}
	plain := func(want string) func(string) bool {
		return func(s string) bool { return strings.Contains(ansi.Strip(s), want) }
	}
	d.demo('8')
	d.waitUntil("the file made", plain("demo_file"))
	d.key(tea.KeySpace)
	d.waitUntil("the upload and its manifest", plain("file_sent"))
	d.waitUntil("the file waiting at bob", plain("waiting · d download"))
	d.key(tea.KeySpace)
	d.waitUntil("bob killed mid-download", plain("crashed at about 40% of its download"))

	// What bob kept: part of the file, not all of it.
	d.key(tea.KeySpace)
	d.waitUntil("bob back", plain("bob/1 reopened"))
	bob, alice := d.w.client(demoBob), d.w.client(demoAlice)
	pend, err := bob.PendingInbound(context.Background(), engine.PageQuery{Limit: 10})
	if err != nil || len(pend) != 1 {
		t.Fatalf("bob's pending after the kill: %d, %v; want the file", len(pend), err)
	}
	st, ok, err := bob.FileTransfer(context.Background(), demoAlice, pend[0].ID)
	if err != nil || !ok {
		t.Fatalf("bob's transfer: %v, %v", ok, err)
	}
	if st.Fetched == 0 || st.Fetched >= st.Chunks || st.Fetched > st.Chunks/2 {
		t.Fatalf("bob kept %d of %d chunks at the kill, want some, at most half", st.Fetched, st.Chunks)
	}
	d.key(tea.KeySpace)
	d.waitUntil("the file saved", plain("file_saved"))
	d.waitForAckProcessed()
	s := d.waitUntil("the verdict", plain("alice→bob 1 sent: 1 once"))
	if strings.Contains(s, "LOST") || strings.Contains(s, "DUPLICATED") || !strings.Contains(ansi.Strip(s), "no loss, no duplicate") {
		t.Fatalf("the verdict:\n%s", s)
	}
	got, err := os.ReadFile(filepath.Join(d.w.dir, "downloads", "bob", demoFileName))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(d.w.demoFile())
	if err != nil || len(want) != size || !bytes.Equal(got, want) {
		t.Fatalf("bob saved %d bytes, the file has %d (%v): not the same", len(got), len(want), err)
	}
	if out, err := alice.PendingOutbound(context.Background(), engine.PageQuery{Limit: 10}); err != nil || len(out) != 0 {
		t.Fatalf("alice still has %d pending (%v): bob's ACK did not clear the file", len(out), err)
	}
	d.key(tea.KeySpace)
	d.waitFor("6/6]")
	d.key(tea.KeySpace)
	d.waitUntil("the scenario to end", func(s string) bool { return !strings.Contains(s, "esc: stop") })
}
