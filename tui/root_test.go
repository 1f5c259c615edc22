package tui

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// fakeClient is a PaneSource with nothing stored: enough to drive the root
// model's keys and routing without a store.
type fakeClient struct {
	self   engine.Address
	events chan engine.Event
	sent   []string
	names  map[engine.Address]string
	// relayKey is what RelayIdentity answers; accepted, the fingerprints
	// AcceptIdentity was asked to pin.
	relayKey engine.IdentityKey
	accepted []string
}

func (f *fakeClient) ConversationsByPerson(context.Context) ([]engine.Conversation, error) {
	return nil, nil
}
func (f *fakeClient) History(context.Context, engine.Address, int64, int) ([]engine.HistoryEntry, error) {
	return nil, nil
}
func (*fakeClient) RefreshPeerList(context.Context, string) (engine.PeerAccount, bool, error) {
	return engine.PeerAccount{}, false, nil
}

func (f *fakeClient) Enqueue(_ context.Context, reqs []engine.SendRequest) ([]engine.SendResult, error) {
	out := make([]engine.SendResult, len(reqs))
	for i, r := range reqs {
		f.sent = append(f.sent, string(r.Body))
		out[i].ID = wire.LogicalID{1}
	}
	return out, nil
}
func (f *fakeClient) PendingInbound(context.Context, engine.PageQuery) ([]engine.InboundMessage, error) {
	return nil, nil
}
func (f *fakeClient) CountInbound(context.Context, *engine.Address) (int, error) { return 0, nil }
func (f *fakeClient) FinalizeBatch(context.Context, []engine.FinalizeRequest) ([]engine.FinalizeResult, error) {
	return nil, nil
}
func (f *fakeClient) PendingOutbound(context.Context, engine.PageQuery) ([]engine.OutboundMessage, error) {
	return nil, nil
}
func (f *fakeClient) CountOutbound(context.Context, *engine.Address) (int, error) { return 0, nil }
func (f *fakeClient) Retry(context.Context, engine.Address) ([]wire.LogicalID, error) {
	return nil, nil
}
func (f *fakeClient) Abandon(context.Context, engine.Address, wire.LogicalID) error { return nil }
func (f *fakeClient) Self() engine.Address                                          { return f.self }
func (f *fakeClient) Identity() engine.IdentityKey                                  { return engine.IdentityKey{} }
func (f *fakeClient) Events() <-chan engine.Event                                   { return f.events }
func (f *fakeClient) ResyncRequired() bool                                          { return false }
func (f *fakeClient) MarkPresented(context.Context) error                           { return nil }
func (f *fakeClient) Safety(context.Context, engine.Address) (engine.SafetyNumberView, error) {
	return engine.SafetyNumberView{}, nil
}
func (f *fakeClient) Policy() engine.Policy { return engine.Policy{} }
func (f *fakeClient) UnfinishedImportProgress(context.Context) (engine.ImportProgress, bool, error) {
	return engine.ImportProgress{}, false, nil
}
func (f *fakeClient) Trace(_ context.Context, peer engine.Address, id wire.LogicalID, dir engine.Direction) (engine.Trace, error) {
	return engine.Trace{Peer: peer, ID: id, Direction: dir, State: "unknown"}, nil
}
func (f *fakeClient) Contacts(context.Context) (map[engine.Address]string, error) {
	return f.names, nil
}
func (f *fakeClient) SetContact(_ context.Context, peer engine.Address, name string) error {
	if f.names == nil {
		f.names = map[engine.Address]string{}
	}
	if name == "" {
		delete(f.names, peer)
	} else {
		f.names[peer] = name
	}
	return nil
}
func (f *fakeClient) RelayIdentity(context.Context, engine.Address) (engine.IdentityKey, error) {
	return f.relayKey, nil
}
func (f *fakeClient) AcceptIdentity(_ context.Context, _ engine.Address, fingerprint string) (engine.IdentityKey, error) {
	f.accepted = append(f.accepted, fingerprint)
	return engine.IdentityKey{}, nil
}

// newTestRoot is a one-profile root with focus in the composer to bob/1.
func newTestRoot(t *testing.T) (Model, *fakeClient, chan struct{}) {
	t.Helper()
	fc := &fakeClient{self: demoAlice, events: make(chan engine.Event, 8)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	s := &Attachment{Client: fc, Events: fc.events, Notes: make(chan eventlogEntry), Done: done, State: func() string { return "connected" }}
	m := New(context.Background(), themes.MustGet("dark"), discard, fixedClock)
	p := &m.panes[m.AddPane(demoAlice, s, PaneOptions{Compose: true})]
	p.conv().Select(demoBob)
	p.selectPeer(demoBob)
	m.panes[0].setActive(true)
	m2, _ := m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	return m2.(Model), fc, done
}

func update(m Model, msg tea.Msg) (Model, tea.Cmd) {
	m2, cmd := m.Update(msg)
	return m2.(Model), cmd
}

func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

// TestQuitFromAnywhere: ctrl+c quits in every state.
func TestQuitFromAnywhere(t *testing.T) {
	ctrlC := tea.KeyMsg{Type: tea.KeyCtrlC}
	for _, tc := range []struct {
		name  string
		setup []tea.Msg
	}{
		{"composer", nil},
		{"conversations address prompt", []tea.Msg{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'1'}, Alt: true}, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'n'}}}},
		{"full help", []tea.Msg{tea.KeyMsg{Type: tea.KeyF1}}},
		{"inbox question", []tea.Msg{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'4'}, Alt: true}, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'D'}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := newTestRoot(t)
			for _, msg := range tc.setup {
				m, _ = update(m, msg)
			}
			if _, cmd := update(m, ctrlC); !isQuit(cmd) {
				t.Fatal("ctrl+c did not quit")
			}
		})
	}
}

// TestQuestionMarkInComposer: "?" is text in the composer and help
// elsewhere; f1 is help everywhere.
func TestQuestionMarkInComposer(t *testing.T) {
	m, _, _ := newTestRoot(t)
	q := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'?'}}
	m, _ = update(m, q)
	if m.full || m.panes[0].comp().Value() != "?" {
		t.Fatalf("? in the composer: full help %v, text %q", m.full, m.panes[0].comp().Value())
	}
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyF1})
	if !m.full || !strings.Contains(m.View(), "less help") {
		t.Fatal("f1 did not show the full help")
	}
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyTab})
	m, _ = update(m, q)
	if m.full {
		t.Fatal("? outside a text field did not toggle the help")
	}
}

// TestTabCycles: tab and shift+tab move through every panel; alt+digit
// jumps.
func TestTabCycles(t *testing.T) {
	m, _, _ := newTestRoot(t)
	seen := map[panelID]bool{}
	for i := 0; i < int(panelCount); i++ {
		seen[m.panes[0].focus] = true
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyTab})
	}
	if len(seen) != int(panelCount) || m.panes[0].focus != panelComposer {
		t.Fatalf("tab visited %v and ended on %v", seen, m.panes[0].focus)
	}
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyShiftTab})
	if m.panes[0].focus != panelTimeline {
		t.Fatalf("shift+tab went to %v", m.panes[0].focus)
	}
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'5'}, Alt: true})
	if m.panes[0].focus != panelOutbox || !strings.Contains(m.View(), "▶ Outbox") {
		t.Fatalf("alt+5 went to %v", m.panes[0].focus)
	}
}

// TestStaleResultsDropped: a result tagged with an older generation (a
// client closed since) does not reach the pane.
func TestStaleResultsDropped(t *testing.T) {
	m, _, _ := newTestRoot(t)
	gen := m.panes[0].gen
	m.panes[0].detach("crashed")
	before := len(m.panes[0].ev().Entries())
	m, _ = update(m, paneMsg{pane: 0, gen: gen, msg: noteMsg{entry: eventlogEntry{Name: "late"}}})
	if len(m.panes[0].ev().Entries()) != before {
		t.Fatal("a result from the closed client was applied")
	}
	if !strings.Contains(m.View(), "CRASHED") {
		t.Fatalf("the closed profile is not shown as such:\n%s", m.View())
	}
}

// TestTagUnpacksBatches: a pane's batch is run by the runtime with each
// result routed back to the pane.
func TestTagUnpacksBatches(t *testing.T) {
	cmd := tag(1, 7, tea.Batch(func() tea.Msg { return "a" }, func() tea.Msg { return "b" }))
	b, ok := cmd().(tea.BatchMsg)
	if !ok || len(b) != 2 {
		t.Fatalf("tag(batch) = %T, want a batch of 2", cmd())
	}
	for i, c := range b {
		pm, ok := c().(paneMsg)
		if !ok || pm.pane != 1 || pm.gen != 7 || pm.msg != []string{"a", "b"}[i] {
			t.Fatalf("item %d = %#v", i, c())
		}
	}
	if tag(0, 0, nil) != nil {
		t.Fatal("tag(nil) is not nil")
	}
}

type eventlogEntry = eventlog.Entry

// TestSmallTerminals: at 80x24 one profile shows its conversations, a
// timeline of at least 12 lines and the composer, with the hidden panels'
// counts in the status bar and each hidden panel a key away; at 60x20 and
// below every line is exactly as wide as the window and nothing spills.
func TestSmallTerminals(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m, _ = update(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) != 24 {
		t.Fatalf("80x24: %d lines", len(lines))
	}
	if !m.panes[0].lay.compact || m.panes[0].lay.topH-1 < 12 {
		t.Fatalf("80x24: compact %v with a timeline of %d lines", m.panes[0].lay.compact, m.panes[0].lay.topH-1)
	}
	for _, want := range []string{"Conversations", "Timeline", "Composer", "in 0 · out 0 (alt+4/5)"} {
		if !strings.Contains(v, want) {
			t.Fatalf("80x24 lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "Inbox") || strings.Contains(v, "Events") {
		t.Fatalf("80x24 shows the panels it should hide:\n%s", v)
	}
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'4'}, Alt: true})
	if v := m.View(); !strings.Contains(v, "▶ Inbox") || strings.Contains(v, "Timeline") {
		t.Fatalf("alt+4 at 80x24 does not show the inbox in the conversation's place:\n%s", v)
	}
	for _, size := range [][2]int{{60, 20}, {50, 14}, {40, 10}, {160, 48}, {100, 30}} {
		m, _ = update(m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		lines := strings.Split(m.View(), "\n")
		if len(lines) != size[1] {
			t.Fatalf("%dx%d: %d lines", size[0], size[1], len(lines))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w != size[0] {
				t.Fatalf("%dx%d: line %d is %d cells wide:\n%s", size[0], size[1], i, w, m.View())
			}
		}
	}
}

// TestComposerGrows: the composer takes more lines as a message gets
// longer, up to its limit, and gives them back once sent.
func TestComposerGrows(t *testing.T) {
	m, _, _ := newTestRoot(t)
	before := m.panes[0].lay.compH
	for i := 0; i < 5; i++ {
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("line")})
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyCtrlJ})
	}
	if after := m.panes[0].lay.compH; after <= before+2 {
		t.Fatalf("the composer stayed %d lines tall (was %d) with six lines in it", after, before)
	}
}

// TestQuitAsksWithADraft: ctrl+c with text in the composer asks once; a
// second ctrl+c quits, any other key keeps the draft.
func TestQuitAsksWithADraft(t *testing.T) {
	ctrlC := tea.KeyMsg{Type: tea.KeyCtrlC}
	m, _, _ := newTestRoot(t)
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("half a thought")})
	m, cmd := update(m, ctrlC)
	if isQuit(cmd) || !strings.Contains(m.View(), "ctrl+c again quits and loses alice/1's draft to bob/1") {
		t.Fatalf("ctrl+c with a draft quit or did not ask:\n%s", m.View())
	}
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("!")})
	if m.panes[0].comp().Value() != "half a thought!" {
		t.Fatalf("the key after the question was lost: %q", m.panes[0].comp().Value())
	}
	if _, cmd := update(m, ctrlC); isQuit(cmd) {
		t.Fatal("the question was not asked again after another key")
	}
	m, _ = update(m, ctrlC)
	if _, cmd := update(m, ctrlC); !isQuit(cmd) {
		t.Fatal("a second ctrl+c did not quit")
	}
}

// TestSeam: what a wrapper does through the seam reaches the pane: a note
// reaches the OnNote hook, flags show in the status bar, a detached pane
// says why with the wrapper's hint, and Events names the pane of a run of
// events only for its current client.
func TestSeam(t *testing.T) {
	fc := &fakeClient{self: demoAlice, events: make(chan engine.Event, 8)}
	done := make(chan struct{})
	defer close(done)
	var noted []string
	m := New(context.Background(), themes.MustGet("dark"), discard, fixedClock)
	i := m.AddPane(demoAlice, &Attachment{Client: fc, Events: fc.events, Done: done}, PaneOptions{
		ClosedHint: "press o",
		OnNote:     func(self engine.Address, e eventlog.Entry) { noted = append(noted, self.String()+" "+e.Name) },
	})
	m, _ = update(m, tea.WindowSizeMsg{Width: 100, Height: 30})
	m.Note(i, eventlog.Entry{Name: "hello"})
	if len(noted) != 1 || noted[0] != "alice/1 hello" {
		t.Fatalf("the note hook saw %q, want alice/1 hello", noted)
	}
	m.SetFlags(i, []string{"held"})
	if s := m.View(); !strings.Contains(s, "│ held") {
		t.Fatalf("the flag is not in the status bar:\n%s", s)
	}
	events := paneMsg{pane: i, gen: m.panes[i].gen, msg: eventsMsg{}}
	if got, ok := m.Events(events); !ok || got != i {
		t.Fatalf("Events = %d, %v; want %d, true", got, ok, i)
	}
	m.Detach(i, "crashed")
	if _, ok := m.Events(events); ok {
		t.Fatal("Events named a pane for a client detached since")
	}
	if s := m.View(); !strings.Contains(s, "CRASHED: press o") || m.Pane(i).Open {
		t.Fatalf("the detached pane does not say so with the hint:\n%s", s)
	}
}

// TestComposerShowsFirstLine: with three lines typed in the chat, the
// composer shows all three, the first included.
func TestComposerShowsFirstLine(t *testing.T) {
	for _, size := range [][2]int{{100, 30}, {80, 24}, {110, 32}} {
		m, _, _ := newTestRoot(t)
		m, _ = update(m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for i, l := range []string{"first line", "second line", "third line"} {
			if i > 0 {
				m, _ = update(m, tea.KeyMsg{Type: tea.KeyCtrlJ})
				m.View()
			}
			for _, r := range l {
				m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
				m = flushed(m) // the frame's insertion of what was typed
				m.View()       // as a program draws after each key
			}
		}
		v := m.View()
		for _, l := range []string{"first line", "second line", "third line"} {
			if !strings.Contains(v, l) {
				t.Fatalf("%dx%d: %q is not shown:\n%s", size[0], size[1], l, v)
			}
		}
	}
}

// flushed is m after its composers inserted the keys gathered for the
// next frame, laid out again, as the program is a frame later.
func flushed(m Model) Model {
	for i := range m.panes {
		m.panes[i].comp().Flush()
	}
	m.Relayout()
	return m
}
