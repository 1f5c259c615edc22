package tui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
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

// TestDevicesPanel: alt+8 lists the devices of alice's account (this one
// marked, holding the account key), says how a device is linked, refuses
// to remove this device, and removes alice/2 once asked and confirmed:
// the engine's list then revokes it and the panel shows it removed.
func TestDevicesPanel(t *testing.T) {
	ctx := context.Background()
	net := enginetest.NewNetwork()
	alice := openTestClient(t, net, demoAlice)
	acc, err := alice.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.SetDeviceList(acc.List); err != nil {
		t.Fatal(err)
	}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.AddDevice(ctx, engine.DeviceEntryFor(id, "alice", acc.Key.Public(), 2, testNow.Unix())); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	m := New(ctx, themes.MustGet("dark"), discard, fixedClock)
	m.AddPane(demoAlice, &Attachment{Client: alice, Events: alice.Events(), Done: done, State: func() string { return "connected" }},
		PaneOptions{ChatFirst: true, LinkCommand: "parley link --profile DIR --relay memory://"})
	var screen atomic.Pointer[string]
	tm := teatest.NewTestModel(t, screenProbe{Model: m, screen: &screen}, teatest.WithInitialTermSize(160, 30))
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		close(done)
	})
	r := &requestRun{t: t, tm: tm, screen: &screen}
	r.waitFor("relay connected")
	r.keys(alt('8'))
	r.waitFor("Devices", "2 active · list generation 2", "alice/1 · active", "this device, holds the account key", "alice/2 · active")
	r.keys(runes("l"))
	r.waitFor("to link a device: run parley link --profile DIR --relay memory:// on it")
	r.keys(runes("r"))
	r.waitFor("this device cannot remove itself")
	r.keys(runes("j"), runes("r"))
	r.waitFor("remove alice/2?")
	r.keys(runes("n"))
	r.waitFor("kept alice/2")
	r.keys(runes("r"))
	r.waitFor("remove alice/2?")
	r.keys(runes("y"))
	s := r.waitFor("removed alice/2 (device list generation 3)", "alice/2 · removed", "1 active · list generation 3")
	if strings.Contains(s, "alice/2 · active") {
		t.Fatalf("alice/2 still shows active:\n%s", s)
	}
	after, err := alice.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := engine.ActiveAddresses(after.List); len(got) != 1 || got[0] != demoAlice || after.List.Entries[1].State != wire.DeviceRevoked {
		t.Fatalf("the account after the removal: %+v, want alice/2 revoked", after.List.Entries)
	}
}

// memMailbox is one side of a provisioning mailbox in memory: what one
// side sends the other receives, in order; closing either side ends both.
type memMailbox struct {
	in     <-chan []byte
	out    chan<- []byte
	closed chan struct{}
	once   *sync.Once
}

// memMailboxes returns the two sides of a mailbox.
func memMailboxes() (*memMailbox, *memMailbox) {
	ab, ba := make(chan []byte, 8), make(chan []byte, 8)
	closed, once := make(chan struct{}), &sync.Once{}
	return &memMailbox{in: ba, out: ab, closed: closed, once: once}, &memMailbox{in: ab, out: ba, closed: closed, once: once}
}

var errMailboxClosed = errors.New("the mailbox is closed")

func (b *memMailbox) Send(ctx context.Context, p []byte) error {
	select {
	case <-b.closed:
		return errMailboxClosed
	default:
	}
	select {
	case b.out <- p:
		return nil
	case <-b.closed:
		return errMailboxClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *memMailbox) Receive(ctx context.Context) ([]byte, error) {
	select {
	case p := <-b.in:
		return p, nil
	case <-b.closed:
		return nil, errMailboxClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *memMailbox) Close() error { b.once.Do(func() { close(b.closed) }); return nil }

// newDevice is the new device's side of a ceremony, driven by the
// engine's link API as parley link drives it: it puts its hello in the
// mailbox and returns its code; started, it takes the offer, reports the
// digits, joins (answering for the person on its screen), and stores its
// profile from the package.
type newDevice struct {
	t      *testing.T
	n      *engine.LinkNew
	box    *memMailbox
	code   string
	check  chan string
	result chan error
	self   engine.Address
	dir    string
}

func startNewDevice(t *testing.T, box *memMailbox) *newDevice {
	t.Helper()
	n, err := engine.NewLinkNew(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	if err := box.Send(context.Background(), n.Hello()); err != nil {
		t.Fatal(err)
	}
	d := &newDevice{t: t, n: n, box: box, check: make(chan string, 1), result: make(chan error, 1), dir: filepath.Join(t.TempDir(), "new")}
	d.code = n.Code("memory://", wire.MailboxID{7}).String()
	go func() { d.result <- d.run() }()
	return d
}

func (d *newDevice) run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	offer, err := d.box.Receive(ctx)
	if err != nil {
		return err
	}
	check, o, err := d.n.TakeOffer(offer)
	if err != nil {
		return err
	}
	d.check <- check
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		return err
	}
	if err := d.box.Send(ctx, d.n.Join(id)); err != nil {
		return err
	}
	msg, err := d.box.Receive(ctx)
	if err != nil {
		return err
	}
	pkg, err := d.n.TakePackage(msg)
	if err != nil {
		return err
	}
	st, err := store.Create(ctx, d.dir, demoPassphrase, store.Options{KDF: demoKDF, Now: fixedClock})
	if err != nil {
		return err
	}
	defer st.Close()
	if d.self, err = engine.CreateLinkedProfile(ctx, st, "memory://", id, o.Number, pkg, engine.HistoryChoice{Mode: engine.HistoryAll}, nil, testNow); err != nil {
		return err
	}
	return d.box.Send(ctx, d.n.Done())
}

// TestDevicesPanelLinksByCode: on alice's device 1, a in the devices
// panel takes the code a new device printed, shows the six digits that
// device shows, and links it once y confirms: the new device stores its
// profile from the package as alice/2, alice's list names it, the panel
// shows it active and says so. A code that is not one, digits not
// confirmed (n) and a mailbox that cannot be joined each link nothing,
// leave alice's list as it was, and say so in one line (the relay's words
// cleaned of control characters).
func TestDevicesPanelLinksByCode(t *testing.T) {
	ctx := context.Background()
	net := enginetest.NewNetwork()
	alice := openFilesClient(t, net, demoAlice)
	acc, err := alice.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.SetDeviceList(acc.List); err != nil {
		t.Fatal(err)
	}

	// Each join hands the panel the next mailbox the test prepared, or
	// fails as a relay might.
	var mu sync.Mutex
	var next *memMailbox
	var joinErr error
	linking := &DeviceLinking{Join: func(_ context.Context, code engine.LinkCode) (LinkMailbox, error) {
		mu.Lock()
		defer mu.Unlock()
		if joinErr != nil {
			return nil, joinErr
		}
		if code.Relay != "memory://" {
			return nil, fmt.Errorf("the new device uses the relay %s", code.Relay)
		}
		return next, nil
	}}
	prepare := func() *newDevice {
		host, other := memMailboxes()
		mu.Lock()
		next, joinErr = host, nil
		mu.Unlock()
		return startNewDevice(t, other)
	}

	done := make(chan struct{})
	m := New(ctx, themes.MustGet("dark"), discard, fixedClock)
	m.AddPane(demoAlice, &Attachment{Client: alice, Events: alice.Events(), Done: done, State: func() string { return "connected" }},
		PaneOptions{ChatFirst: true, LinkCommand: "parley link --profile DIR --relay memory://", LinkDevice: linking})
	var screen atomic.Pointer[string]
	tm := teatest.NewTestModel(t, screenProbe{Model: m, screen: &screen}, teatest.WithInitialTermSize(160, 30))
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		close(done)
	})
	r := &requestRun{t: t, tm: tm, screen: &screen}
	r.waitFor("relay connected")
	r.keys(alt('8'))
	r.waitFor("Devices", "1 active · list generation 1", "alice/1 · active")
	generation := func(want uint64) {
		t.Helper()
		a, err := alice.Account(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if a.List.Generation != want {
			t.Fatalf("alice's list is at generation %d, want %d", a.List.Generation, want)
		}
	}

	// Not a code: the input says so and stays open; esc leaves it.
	r.keys(runes("a"))
	r.waitFor("code:")
	r.keys(runes("not-a-code"), tea.KeyMsg{Type: tea.KeyEnter})
	r.waitFor("not a code that parley link printed")
	r.keys(tea.KeyMsg{Type: tea.KeyEsc})
	r.waitFor("not linked: no code entered")

	// The digits not confirmed: nothing changes, and the new device's
	// wait ends with the mailbox.
	d := prepare()
	r.keys(runes("a"), runes(d.code), tea.KeyMsg{Type: tea.KeyEnter})
	check := <-d.check
	r.waitFor("link alice/2? the new device must show check=" + check)
	r.keys(runes("n"))
	r.waitFor("not linked: the digits were not confirmed (nothing was changed)")
	if err := <-d.result; !errors.Is(err, errMailboxClosed) {
		t.Fatalf("the new device's ceremony after n: %v, want the mailbox closed", err)
	}
	generation(1)

	// A mailbox that cannot be joined: the reason in one clean line.
	unjoined := prepare()
	mu.Lock()
	joinErr = errors.New("relay says \x1b[2Jno such mailbox")
	mu.Unlock()
	r.keys(runes("a"), runes(unjoined.code), tea.KeyMsg{Type: tea.KeyEnter})
	s := r.waitFor("not linked:", "relay says [2Jno such mailbox")
	if strings.Contains(s, "\x1b[2J") {
		t.Fatalf("the refusal reached the screen with its escape sequence:\n%q", s)
	}
	generation(1)
	unjoined.box.Close()
	<-unjoined.result

	// Confirmed: linked.
	d = prepare()
	r.keys(runes("a"), runes(d.code), tea.KeyMsg{Type: tea.KeyEnter})
	check = <-d.check
	r.waitFor("check=" + check)
	r.keys(runes("y"))
	if err := <-d.result; err != nil {
		t.Fatalf("the new device's side: %v", err)
	}
	if d.self != engine.MustParseAddress("alice/2") {
		t.Fatalf("the new device stored its profile as %s, want alice/2", d.self)
	}
	r.waitFor("linked alice/2 (device list generation 2)", "alice/2 · active", "2 active · list generation 2")
	generation(2)
	after, err := alice.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := engine.ActiveAddresses(after.List); len(got) != 2 || got[1] != engine.MustParseAddress("alice/2") {
		t.Fatalf("alice's active devices after the link: %v", got)
	}
}

// openFilesClient is openTestClient with a files directory, which a link's
// history needs.
func openFilesClient(t *testing.T, net *enginetest.Network, addr engine.Address) *engine.Client {
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
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: net.Endpoint(addr), Now: fixedClock,
		Files: engine.FileConfig{Dir: filepath.Join(dir, "files")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
