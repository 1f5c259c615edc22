package tui

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/themes"
)

// openRequestClient opens a fresh profile in request mode (as parley init
// makes them): a first message from a device it has not accepted is a
// request.
func openRequestClient(t *testing.T, net *enginetest.Network, addr engine.Address) *engine.Client {
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
	st.Close()
	if st, err = store.Open(ctx, dir, demoPassphrase, store.Options{Now: fixedClock}); err != nil {
		t.Fatal(err)
	}
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: net.Endpoint(addr), Now: fixedClock, Requests: true, CapStrangers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// screenProbe keeps the last frame the program drew, for tests that wait
// on what the screen shows.
type screenProbe struct {
	Model
	screen *atomic.Pointer[string]
}

func (p screenProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := p.Model.Update(msg)
	p.Model = m.(Model)
	s := ansi.Strip(p.Model.View())
	p.screen.Store(&s)
	return p, cmd
}

// requestRun is bob's chat in a real Bubble Tea program, in request mode,
// with carol a stranger on the same network.
type requestRun struct {
	t      *testing.T
	bob    *engine.Client
	carol  *engine.Client
	tm     *teatest.TestModel
	screen *atomic.Pointer[string]
}

func startRequestRun(t *testing.T) *requestRun {
	t.Helper()
	net := enginetest.NewNetwork()
	bob := openRequestClient(t, net, demoBob)
	carol := openTestClient(t, net, engine.MustParseAddress("carol/1"))
	if err := bob.RefreshPreKeys(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	m := New(context.Background(), themes.MustGet("dark"), discard, fixedClock)
	m.AddPane(demoBob, &Attachment{Client: bob, Events: bob.Events(), Done: done, State: func() string { return "connected" }},
		PaneOptions{ChatFirst: true})
	var screen atomic.Pointer[string]
	tm := teatest.NewTestModel(t, screenProbe{Model: m, screen: &screen}, teatest.WithInitialTermSize(120, 30))
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		close(done)
	})
	return &requestRun{t: t, bob: bob, carol: carol, tm: tm, screen: &screen}
}

// strangerWrites has carol write to bob and bob receive it.
func (r *requestRun) strangerWrites(body string) {
	r.t.Helper()
	ctx := context.Background()
	if _, err := r.carol.Send(ctx, demoBob, []byte(body)); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.bob.Sync(ctx); err != nil {
		r.t.Fatal(err)
	}
}

func (r *requestRun) view() string {
	if s := r.screen.Load(); s != nil {
		return *s
	}
	return ""
}

// waitUntil waits until ok holds for the screen.
func (r *requestRun) waitUntil(what string, ok func(string) bool) string {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := r.view()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the screen never showed %s; last screen:\n%s", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *requestRun) waitFor(want ...string) string {
	r.t.Helper()
	return r.waitUntil(strings.Join(want, " and "), func(s string) bool {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	})
}

func (r *requestRun) keys(ks ...tea.KeyMsg) {
	for _, k := range ks {
		r.tm.Send(k)
	}
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
func alt(d rune) tea.KeyMsg     { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{d}, Alt: true} }

// TestRequestAcceptedReachesConversation: a stranger's message shows as a
// request (the status bar counts it, the requests panel lists it with its
// cleaned preview) and nowhere in the conversations; accept moves it into
// the conversation, waiting as any delivery.
func TestRequestAcceptedReachesConversation(t *testing.T) {
	r := startRequestRun(t)
	r.waitFor("Conversations", "none yet")
	r.strangerWrites("hello bob \x1b[2Jfrom carol")
	s := r.waitFor("1 request (alt+7)")
	if strings.Contains(s, "carol/1") || strings.Contains(s, "hello bob") {
		t.Fatalf("a request shows outside the requests panel:\n%s", s)
	}
	r.keys(alt('7'))
	// The engine wrote the escape out as text; the screen shows that text.
	r.waitFor("Requests · 1 from devices not accepted", "carol/1 · 1 message · first seen 12:00:00", `"hello bob \u001b[2Jfrom carol"`)
	r.keys(runes("a"))
	r.waitFor("accepted carol/1: 1 message now in the conversation")
	r.keys(alt('1'))
	s = r.waitFor("carol/1 in 1", "hello bob", "waiting")
	if strings.Contains(s, "request (alt+7)") {
		t.Fatalf("the status bar still counts a request after the accept:\n%s", s)
	}
	if reqs, err := r.bob.Requests(context.Background()); err != nil || len(reqs) != 0 {
		t.Fatalf("requests after the accept: %v, %v", reqs, err)
	}
}

// TestRequestRejected: reject deletes the request; it never becomes a
// conversation.
func TestRequestRejected(t *testing.T) {
	r := startRequestRun(t)
	r.strangerWrites("buy now")
	r.waitFor("1 request (alt+7)")
	r.keys(alt('7'))
	r.waitFor(`"buy now"`)
	r.keys(runes("r"))
	s := r.waitFor("rejected carol/1", "Requests · 0")
	if strings.Contains(s, "request (alt+7)") {
		t.Fatalf("the status bar still counts the rejected request:\n%s", s)
	}
	r.keys(alt('1'))
	s = r.waitFor("Conversations", "none yet")
	if strings.Contains(s, "carol/1") {
		t.Fatalf("a rejected request shows as a conversation:\n%s", s)
	}
	if blocks, err := r.bob.Blocks(context.Background()); err != nil || len(blocks) != 0 {
		t.Fatalf("a reject blocked: %v, %v", blocks, err)
	}
}

// TestRequestBlocked: b asks, n keeps the request, b then y rejects and
// blocks the sender in the engine.
func TestRequestBlocked(t *testing.T) {
	r := startRequestRun(t)
	r.strangerWrites("spam")
	r.waitFor("1 request (alt+7)")
	r.keys(alt('7'), runes("b"))
	r.waitFor("reject and block carol/1?")
	r.keys(runes("n"))
	r.waitFor("kept the request of carol/1", "Requests · 1")
	r.keys(runes("b"), runes("y"))
	r.waitFor("rejected and blocked carol/1", "Requests · 0")
	blocks, err := r.bob.Blocks(context.Background())
	if err != nil || len(blocks) != 1 || blocks[0] != engine.MustParseAddress("carol/1") {
		t.Fatalf("blocks after reject + block: %v, %v", blocks, err)
	}
}

// TestNoBellForStrangers: a request, or a message another device of this
// person decided, rings no bell, sends no desktop notification and counts
// nothing unread; a delivery out of view does.
func TestNoBellForStrangers(t *testing.T) {
	m, _, _ := newTestRoot(t)
	var out bytes.Buffer
	m.bellOut, m.notify = &out, Notify{Bell: true, Desktop: true}
	carol := engine.MustParseAddress("carol/1")
	stranger := []engine.Event{
		{Kind: engine.EventReceived, Peer: carol, Result: &engine.ReceiveResult{Kind: engine.ResultRequest, Sender: carol}},
		{Kind: engine.EventRequest, Peer: carol},
		{Kind: engine.EventRequestsSwept, Count: 1},
	}
	m.blurred = true
	if cmd := m.announce(0, stranger); cmd != nil {
		cmd()
	}
	if out.Len() != 0 || m.unread() != 0 {
		t.Fatalf("a stranger's request announced %q, unread %d; want nothing", out.String(), m.unread())
	}
	// A message another device of this person decided already rings
	// nothing either (issue 33).
	decided := []engine.Event{{Kind: engine.EventReceived, Peer: carol, Result: &engine.ReceiveResult{Kind: engine.ResultDelivery, Sender: carol, DecidedElsewhere: true}}}
	if cmd := m.announce(0, decided); cmd != nil {
		runAll(cmd)
	}
	if out.Len() != 0 || m.unread() != 0 {
		t.Fatalf("a message decided elsewhere announced %q, unread %d; want nothing", out.String(), m.unread())
	}
	friend := []engine.Event{{Kind: engine.EventReceived, Peer: carol, Result: &engine.ReceiveResult{Kind: engine.ResultDelivery, Sender: carol}}}
	if cmd := m.announce(0, friend); cmd != nil {
		runAll(cmd)
	}
	if !strings.Contains(out.String(), "\a") {
		t.Fatalf("a delivery out of view rang no bell: %q", out.String())
	}
}

// runAll runs a command and the commands of a batch it returns.
func runAll(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	if b, ok := cmd().(tea.BatchMsg); ok {
		for _, c := range b {
			runAll(c)
		}
	}
}

// TestAcceptElsewhereRefreshes: a request accepted outside the panel (the
// engine's AcceptRequest, as writing to the requester does) reaches the
// conversations, the timeline and the status bar through the engine's
// event alone.
func TestAcceptElsewhereRefreshes(t *testing.T) {
	r := startRequestRun(t)
	r.strangerWrites("hello again")
	r.waitFor("1 request (alt+7)", "none yet")
	if n, err := r.bob.AcceptRequest(context.Background(), engine.MustParseAddress("carol/1")); n != 1 || err != nil {
		t.Fatalf("AcceptRequest = %d, %v; want 1 message", n, err)
	}
	s := r.waitFor("carol/1 in 1", "hello again", "waiting", "in 1 · out 0 (alt+4/5)")
	if strings.Contains(s, "request (alt+7)") {
		t.Fatalf("the status bar still counts the accepted request:\n%s", s)
	}
}
