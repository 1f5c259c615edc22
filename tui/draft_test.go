package tui

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
)

// TestDraftKeptAcrossRestarts: text left in the composer is kept in the
// profile when parley tui ends (ctrl+c does not ask: nothing is lost) and is
// in the composer again on the next start.
func TestDraftKeptAcrossRestarts(t *testing.T) {
	net := enginetest.NewNetwork()
	alice := openTestClient(t, net, demoAlice)
	run := func(typed, want string) {
		t.Helper()
		in, keys := io.Pipe()
		defer keys.Close()
		out := &syncBuffer{}
		errc := make(chan error, 1)
		go func() {
			errc <- Run(context.Background(), alice, Options{Input: in, Output: out, NoAltScreen: true, Logger: discard,
				Now: fixedClock, ConnState: func() string { return "connected" }, Peer: "bob/1"})
		}()
		waitOut := func(s string) {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(out.String(), s) {
				if time.Now().After(deadline) {
					t.Fatalf("the screen never showed %q; output:\n%s", s, out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		waitOut("Composer → bob/1")
		if typed != "" {
			keys.Write([]byte(typed))
		}
		waitOut(want)
		keys.Write([]byte{0x03}) // ctrl+c
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("Run after ctrl+c: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("ctrl+c with a draft did not end Run")
		}
	}
	run("see you at 5", "see you at 5")
	if d, err := alice.Drafts(context.Background()); err != nil || d[demoBob] != "see you at 5" {
		t.Fatalf("drafts after quitting: %q, %v; want bob/1's", d, err)
	}
	run("", "› see you at 5")
}

// TestDraftPerConversation: each conversation keeps its own draft: leaving
// one keeps its text, coming back brings it back, and the tick writes what
// changed to the profile once.
func TestDraftPerConversation(t *testing.T) {
	m, _, _ := newTestRoot(t)
	carol := engine.MustParseAddress("carol/1")
	p := &m.panes[0]
	p.gotDrafts(draftsMsg{drafts: map[engine.Address]string{carol: "for carol"}})
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("for bob")})
	p = &m.panes[0]
	p.selectPeer(carol)
	if got := p.comp().Value(); got != "for carol" {
		t.Fatalf("carol's composer holds %q, want her stored draft", got)
	}
	p.selectPeer(demoBob)
	if got := p.comp().Value(); got != "for bob" {
		t.Fatalf("bob's composer holds %q, want the text left there", got)
	}
	changed := p.changedDrafts()
	if len(changed) != 1 || changed[demoBob] != "for bob" {
		t.Fatalf("drafts to write: %q, want bob's alone", changed)
	}
	if again := p.changedDrafts(); len(again) != 0 {
		t.Fatalf("drafts written twice: %q", again)
	}
}

// TestQuitKeepsQueuedAsDrafts: with a profile that keeps drafts, a second
// ctrl+c while messages wait behind a send in flight moves them into the
// draft, so that quitting at once loses no text; the sends taken back never
// run.
func TestQuitKeepsQueuedAsDrafts(t *testing.T) {
	m, fc, _ := newTestRoot(t)
	m.panes[0].att.Client = &draftClient{fakeClient: fc}
	m.panes[0].gotDrafts(draftsMsg{})
	for _, b := range []string{"one", "two", "three"} {
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(b)})
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyEnter})
	}
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyCtrlC})
	if !strings.Contains(m.View(), "quit now (keep as drafts)") {
		t.Fatalf("the question does not say the queued messages are kept:\n%s", m.View())
	}
	m, cmd := update(m, tea.KeyMsg{Type: tea.KeyCtrlC})
	if !isQuit(cmd) {
		t.Fatal("a second ctrl+c did not quit")
	}
	// None of the sends' commands ran: all three are taken back.
	if got := m.panes[0].comp().Value(); got != "one\ntwo\nthree" {
		t.Fatalf("the composer holds %q, want the three messages not stored", got)
	}
	dc := m.panes[0].att.Client.(*draftClient)
	if err := m.SaveDrafts(context.Background()); err != nil || dc.saved[demoBob] != "one\ntwo\nthree" {
		t.Fatalf("saved %q, %v; want bob/1's draft", dc.saved, err)
	}
}

// draftClient is a fakeClient that keeps drafts in memory.
type draftClient struct {
	*fakeClient
	saved map[engine.Address]string
}

func (d *draftClient) Drafts(context.Context) (map[engine.Address]string, error) {
	return d.saved, nil
}

func (d *draftClient) SaveDraft(_ context.Context, peer engine.Address, text string) error {
	if d.saved == nil {
		d.saved = map[engine.Address]string{}
	}
	d.saved[peer] = text
	return nil
}

// clearingClient is a draftClient whose Enqueue forgets the draft as the
// engine does, in the same step that stores the message.
type clearingClient struct{ *draftClient }

func (c *clearingClient) Enqueue(ctx context.Context, reqs []engine.SendRequest) ([]engine.SendResult, error) {
	for _, r := range reqs {
		if r.ClearDraft {
			c.SaveDraft(ctx, r.Peer, "")
		}
	}
	return c.fakeClient.Enqueue(ctx, reqs)
}

// TestDraftSaveBeforeEnterLandsFirst: a save of the typed text asked for
// just before Enter lands before the send that stores the text and clears
// the draft, even when the send's command runs first; the text is then the
// stored message only, not the draft too.
func TestDraftSaveBeforeEnterLandsFirst(t *testing.T) {
	m, fc, _ := newTestRoot(t)
	dc := &clearingClient{&draftClient{fakeClient: fc}}
	m.panes[0].att.Client = dc
	m.panes[0].comp().SetSource(dc)
	m.panes[0].gotDrafts(draftsMsg{})
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("hello")})
	m.panes[0].comp().Flush()
	save := m.panes[0].saveDrafts()
	if save == nil {
		t.Fatal("no draft save for the typed text")
	}
	m, send := update(m, tea.KeyMsg{Type: tea.KeyEnter})
	runAll(send)
	runAll(save)
	if len(fc.sent) != 1 || fc.sent[0] != "hello" {
		t.Fatalf("sent %q, want hello once", fc.sent)
	}
	if d := dc.saved[demoBob]; d != "" {
		t.Fatalf("the draft is %q after the send stored it: the text would be sent twice", d)
	}
}
