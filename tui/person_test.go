package tui

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/outbox"
	"github.com/parley-chat/parley/tui/timeline"
)

// bobLaptop is bob's second device in the tests of a person.
var bobLaptop = engine.MustParseAddress("bob/2")

// openSecondDevice opens a client for addr, a device to be added to its
// user's account, and returns it with its identity (for the account's
// list).
func openSecondDevice(t *testing.T, net *enginetest.Network, addr engine.Address) (*engine.Client, *engine.Identity) {
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
	prof, err := st.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := session.UnmarshalIdentity(prof.Identity)
	if err != nil {
		t.Fatal(err)
	}
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: net.Endpoint(addr), Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); st.Close() })
	return c, id
}

// personBob is alice holding the device list of bob, a person of bob/1
// and bob/2: alice's message waits for bob on a lane to each device (no
// ACK yet), and each of bob's devices wrote to alice, both messages
// pending at alice.
func personBob(t *testing.T) (ctx context.Context, alice *engine.Client) {
	t.Helper()
	ctx = context.Background()
	net := enginetest.NewNetwork()
	alice = openTestClient(t, net, demoAlice)
	bob := openTestClient(t, net, demoBob)
	laptop, id := openSecondDevice(t, net, bobLaptop)
	for _, c := range []*engine.Client{alice, bob, laptop} {
		if err := c.RefreshPreKeys(ctx); err != nil {
			t.Fatal(err)
		}
	}
	acc, err := bob.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.SetDeviceList(acc.List); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.AddDevice(ctx, engine.DeviceEntryFor(id, demoBob.User, acc.Key.Public(), bobLaptop.Device, testNow.Unix())); err != nil {
		t.Fatal(err)
	}
	if err := alice.CheckPeer(ctx, demoBob); err != nil {
		t.Fatal(err)
	}
	res, err := alice.Enqueue(ctx, []engine.SendRequest{{Peer: demoBob, Body: []byte("to both of bob")}})
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Pump(ctx); err != nil {
		t.Fatal(err)
	}
	// Each device takes alice's message first (her session, no collision)
	// and commits nothing: her lanes wait for ACKs.
	for _, c := range []*engine.Client{bob, laptop} {
		if _, err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bob.Send(ctx, demoAlice, []byte("from the phone")); err != nil {
		t.Fatal(err)
	}
	if _, err := laptop.Send(ctx, demoAlice, []byte("from the laptop")); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []engine.Address{demoBob, bobLaptop} {
		d := dev
		if out, err := alice.PendingOutbound(ctx, engine.PageQuery{Peer: &d}); err != nil || len(out) != 1 {
			t.Fatalf("alice's lanes to %s: %d (%v), want 1", d, len(out), err)
		}
		if in, err := alice.PendingInbound(ctx, engine.PageQuery{Peer: &d}); err != nil || len(in) != 1 {
			t.Fatalf("alice's messages waiting from %s: %d (%v), want 1", d, len(in), err)
		}
	}
	return ctx, alice
}

// TestPersonIsOneConversation: with bob's device list held, alice's
// conversations list bob once, his row counting both devices' waiting
// messages and lanes; his conversation shows the laptop's waiting message,
// labelled bob/2, and commits it there; ctrl+r on his conversation hands
// off the lanes to both devices.
func TestPersonIsOneConversation(t *testing.T) {
	ctx, alice := personBob(t)
	th := themes.MustGet("dark")

	cv := conversations.New(ctx, alice, th)
	cv.SetSize(60, 8)
	cv, _ = cv.Update(msgOf[conversations.LoadedMsg](t, cv.Reload()))
	items := cv.Items()
	if len(items) != 1 || items[0].Peer != demoBob || items[0].PendingIn != 2 || items[0].PendingOut != 2 {
		t.Fatalf("conversations = %+v, want bob/1 alone with 2 in and 2 out", items)
	}
	if v := ansi.Strip(cv.View()); !strings.Contains(v, "bob/1 in 2 out 2") || strings.Contains(v, "bob/2") {
		t.Fatalf("the panel should show bob once, with both devices' counts:\n%s", v)
	}

	tl := timeline.New(ctx, alice, th)
	tl.SetSize(90, 14)
	tl.Focus()
	tl, _ = tl.Update(msgOf[timeline.LoadedMsg](t, tl.SetPeer(demoBob)))
	v := ansi.Strip(tl.View())
	for _, want := range []string{"from the phone", "from the laptop", "bob/2"} {
		if !strings.Contains(v, want) {
			t.Fatalf("bob's conversation lacks %q:\n%s", want, v)
		}
	}
	// c commits the oldest waiting, then the next: the phone's, then the
	// laptop's.
	for i := 0; i < 2; i++ {
		var cmd tea.Cmd
		tl, cmd = tl.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("c")})
		fin := msgOf[timeline.FinalizedMsg](t, cmd)
		if fin.Err != nil || len(fin.Results) != 1 || fin.Results[0].Err != nil {
			t.Fatalf("commit %d from bob's conversation: %+v", i, fin)
		}
		tl, cmd = tl.Update(fin)
		tl, _ = tl.Update(msgOf[timeline.LoadedMsg](t, cmd))
	}
	if in, err := alice.PendingInbound(ctx, engine.PageQuery{}); err != nil || len(in) != 0 {
		t.Fatalf("still waiting after two commits: %+v (%v)", in, err)
	}
	h, err := alice.History(ctx, demoBob, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, e := range h {
		bodies = append(bodies, string(e.Body))
	}
	if got := strings.Join(bodies, "|"); !strings.Contains(got, "from the laptop") || !strings.Contains(got, "from the phone") {
		t.Fatalf("bob's history after the commits: %s", got)
	}

	p := filePane(t, alice, demoAlice, demoBob, PaneOptions{ChatFirst: true})
	r := msgOf[outbox.RetriedMsg](t, press(p, tea.KeyMsg{Type: tea.KeyCtrlR}))
	if r.Err != nil || r.Sent != 2 || r.Devices != 2 || len(r.Peers) != 1 || r.Peers[0] != demoBob {
		t.Fatalf("ctrl+r on bob = %+v, want 2 handed off to bob/1 over 2 devices", r)
	}
	if got, want := outbox.DescribeRetry(r), "2 handed off to bob/1 (2 devices)"; got != want {
		t.Errorf("the retry says %q, want %q", got, want)
	}
}

// TestNoBellForPersonInView: with bob's conversation in view, a delivery
// from his laptop (bob/2, folded into bob's row) is in view: no bell, no
// notification; while the terminal is blurred it counts as away.
func TestNoBellForPersonInView(t *testing.T) {
	m, _, _ := newTestRoot(t)
	var out bytes.Buffer
	m.bellOut, m.notify = &out, Notify{Bell: true, Desktop: true}
	p := &m.panes[0]
	p.conv().Update(conversations.LoadedMsg{List: []engine.Conversation{
		{Peer: demoBob, PendingIn: 1, Devices: []engine.Conversation{{Peer: demoBob}, {Peer: bobLaptop, PendingIn: 1}}},
	}})
	laptop := []engine.Event{{Kind: engine.EventReceived, Peer: bobLaptop, Result: &engine.ReceiveResult{Kind: engine.ResultDelivery, Sender: bobLaptop}}}
	if cmd := m.announce(0, laptop); cmd != nil {
		runAll(cmd)
	}
	if out.Len() != 0 {
		t.Fatalf("a delivery from bob/2 with bob in view announced %q; want nothing", out.String())
	}
	m.blurred = true
	if cmd := m.announce(0, laptop); cmd != nil {
		runAll(cmd)
	}
	if m.away != 1 || !strings.Contains(out.String(), "\a") {
		t.Fatalf("blurred: away %d, announced %q; want 1 and a bell", m.away, out.String())
	}
}

// TestPersonIdentityChange: bob/2's new identity, with bob's conversation
// (his devices folded) chosen, blocks sending there, names bob/2 in the
// status bar, and ctrl+t accepts bob/2's: bob/2 has no row of its own to
// be chosen for it.
func TestPersonIdentityChange(t *testing.T) {
	m, fc, _ := newTestRoot(t)
	p := &m.panes[0]
	p.conv().Update(conversations.LoadedMsg{List: []engine.Conversation{
		{Peer: demoBob, Devices: []engine.Conversation{{Peer: demoBob}, {Peer: bobLaptop}}},
	}})
	p.markChanged(bobLaptop)
	p.changed[bobLaptop].fingerprint = "fp-of-bob2"
	p.layout()
	if v := ansi.Strip(p.View()); !strings.Contains(v, "identity changed: bob/2 · sending blocked") {
		t.Fatalf("bob's conversation does not say bob/2's identity changed:\n%s", v)
	}
	cmd := p.accept()
	if cmd == nil {
		t.Fatal("ctrl+t offers nothing to accept in bob's conversation")
	}
	if msg, ok := cmd().(acceptedMsg); !ok || msg.peer != bobLaptop || msg.err != nil || len(fc.accepted) != 1 || fc.accepted[0] != "fp-of-bob2" {
		t.Fatalf("accept = %+v (accepted %v), want bob/2's fingerprint accepted", msg, fc.accepted)
	}
}
