package tui

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// TestHistoryImported: on a profile whose restore stopped part way, the
// status bar says how far the history import went and the command that
// finishes it; a message the import brought is marked imported in the
// conversation, beside one that came over a session, and its trace says
// it came from a restored backup.
func TestHistoryImported(t *testing.T) {
	ctx := context.Background()
	net := enginetest.NewNetwork()
	dir := filepath.Join(t.TempDir(), "alice")
	st, err := store.Create(ctx, dir, demoPassphrase, store.Options{KDF: demoKDF, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.CreateProfile(ctx, st, demoAlice, "memory://", nil, testNow); err != nil {
		t.Fatal(err)
	}
	alice, err := engine.Open(ctx, engine.Config{Store: st, Relay: net.Endpoint(demoAlice), Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alice.Close() })
	bob := openTestClient(t, net, demoBob)
	if err := alice.RefreshPreKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Send(ctx, demoAlice, []byte("live from bob")); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// A restore's import, stopped after two of its three records.
	archive := [16]byte{0x34}
	imported := wire.LogicalID{0x34, 1}
	if _, err := st.Apply(ctx, engine.ImportStart{Archive: archive, Next: 0, Total: 3, At: testNow.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(ctx, engine.ImportRecords{Archive: archive, From: 0, To: 2, Total: 3, Records: []wire.ArchiveRecord{
		wire.ArchiveMessage{Peer: demoBob.String(), Direction: uint8(engine.DirectionIn), ID: imported,
			At: testNow.Add(time.Minute).UnixNano(), Body: []byte("from the backup")},
	}}); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	m := New(ctx, themes.MustGet("dark"), discard, fixedClock)
	m.AddPane(demoAlice, &Attachment{Client: alice, Events: alice.Events(), Done: done, State: func() string { return "connected" }},
		PaneOptions{ChatFirst: true, Peer: demoBob, ImportCommand: func(link bool) string {
			if link {
				return "the link command"
			}
			return "parley restore FILE --profile " + dir
		}})
	var screen atomic.Pointer[string]
	tm := teatest.NewTestModel(t, screenProbe{Model: m, screen: &screen}, teatest.WithInitialTermSize(160, 30))
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		close(done)
	})
	r := &requestRun{t: t, tm: tm, screen: &screen}
	s := r.waitFor("history import (restore) stopped at 2 of 3 records (66%): run parley restore FILE --profile "+dir,
		"from the backup", "live from bob")
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.Contains(l, "from the backup") && !strings.Contains(l, "imported"):
			t.Errorf("the imported message is not marked: %q", l)
		case strings.Contains(l, "live from bob") && strings.Contains(l, "imported"):
			t.Errorf("a message received here is marked imported: %q", l)
		}
	}
	r.keys(alt('2'), runes("t"))
	r.waitFor("imported from a restored backup")
}

// TestHistoryImportDone: a profile with no unfinished import shows no
// import line.
func TestHistoryImportDone(t *testing.T) {
	net := enginetest.NewNetwork()
	alice := openTestClient(t, net, demoAlice)
	done := make(chan struct{})
	m := New(context.Background(), themes.MustGet("dark"), discard, fixedClock)
	m.AddPane(demoAlice, &Attachment{Client: alice, Events: alice.Events(), Done: done, State: func() string { return "connected" }},
		PaneOptions{ChatFirst: true})
	var screen atomic.Pointer[string]
	tm := teatest.NewTestModel(t, screenProbe{Model: m, screen: &screen}, teatest.WithInitialTermSize(120, 30))
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		close(done)
	})
	r := &requestRun{t: t, tm: tm, screen: &screen}
	r.waitFor("relay connected")
	// Several ticks: the progress was read by then.
	time.Sleep(3 * tickInterval)
	tm.Send(tea.WindowSizeMsg{Width: 120, Height: 30})
	if s := r.waitFor("relay connected"); strings.Contains(s, "history import") {
		t.Fatalf("an import line with no import:\n%s", s)
	}
}
