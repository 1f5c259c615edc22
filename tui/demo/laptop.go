package demo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// A second device of a person, on demand (ctrl+x l, and guided scenario
// 9): the profile with the keyboard links a "laptop" to its account. Both
// devices live in this process, so the ceremony's mailbox is in memory
// instead of on the relay (parley link and parley device add use the
// relay's); everything else is the real thing: the engine's two sides of
// the ceremony, the six digits compared, the list signed at the next
// generation and taken by the relay, the package, a profile made from it.
// The laptop has no pane: its loop commits nothing by itself (a scenario
// step commits on it), and what it reports is drained.

// laptop is bob's second device in scenario 9: the next number of his
// account, 2.
var laptop = engine.MustParseAddress("bob/2")

// memMailbox is one side of a provisioning mailbox in memory.
type memMailbox struct {
	in     <-chan []byte
	out    chan<- []byte
	closed chan struct{}
	once   *sync.Once
}

// errMailboxClosed is what a closed in-memory mailbox answers.
var errMailboxClosed = errors.New("the linking mailbox is closed")

// memMailboxes returns the two sides of one mailbox: what one sends the
// other receives, in order; closing either closes both.
func memMailboxes() (*memMailbox, *memMailbox) {
	ab, ba := make(chan []byte, 4), make(chan []byte, 4)
	closed, once := make(chan struct{}), &sync.Once{}
	return &memMailbox{in: ba, out: ab, closed: closed, once: once}, &memMailbox{in: ab, out: ba, closed: closed, once: once}
}

func (b *memMailbox) Send(ctx context.Context, p []byte) error {
	select {
	case <-b.closed:
		return errMailboxClosed
	case b.out <- p:
		return nil
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

func (b *memMailbox) Close() { b.once.Do(func() { close(b.closed) }) }

// keepLists has the demo keep device lists from now on: every open
// profile publishes its account's list at once (a list not published
// would leave its person's devices unknown to the others), and the fault
// relays announce the relay's lists. A reinstall after this meets them
// (docs/tui.md, scenario 9). The relays announce the lists first (a
// profile publishes only to a relay that keeps them); listsPublished is
// set once every list is at the relay.
func (w *world) keepLists(ctx context.Context) error {
	if w.lists.Swap(true) {
		return nil
	}
	w.mu.Lock()
	var cs []*engine.Client
	for _, d := range w.devs {
		if d.prof != nil {
			cs = append(cs, d.prof.Engine())
		}
	}
	w.mu.Unlock()
	var errs []error
	for _, c := range cs {
		if err := c.PublishDeviceList(ctx); err != nil {
			errs = append(errs, fmt.Errorf("publish the device list of %s: %w", c.Self(), err))
		}
	}
	if len(errs) == 0 {
		w.listsPublished.Store(true)
	}
	return errors.Join(errs...)
}

// keepListsCmd is keepLists in a command, for a scenario's step.
func keepListsCmd(m *Model) tea.Cmd {
	w := m.world
	return func() tea.Msg {
		msg := demoMsg{pane: 1, what: "lists", err: w.keepLists(w.ctx)}
		if msg.err == nil {
			msg.entries = []eventlog.Entry{{At: w.now(), Name: "demo_lists", Level: eventlog.Demo,
				Text: "the demo keeps device lists: each profile published its account's list to the relay"}}
		}
		return msg
	}
}

// listsKept: the demo keeps device lists, and each profile's list is at
// the relay (keepLists ended): a peer's fetch after this step finds it.
func listsKept(v *checkView) error {
	if !v.w.lists.Load() {
		return errors.New("the demo does not keep device lists yet")
	}
	if !v.w.listsPublished.Load() {
		return errors.New("the device lists are not all published yet")
	}
	return nil
}

// linked is what a link did, for the event log.
type linked struct {
	device     engine.Address
	check      string
	generation uint64
}

// linkDevice links a new device to holder's account and opens it without
// a pane. Its history is not carried (the demo's conversations are
// counted from the link on).
func (w *world) linkDevice(ctx context.Context, holder engine.Address) (linked, error) {
	hc := w.client(holder)
	if hc == nil {
		return linked{}, fmt.Errorf("%s is closed", holder)
	}
	n, err := engine.NewLinkNew(engine.SystemRandom{})
	if err != nil {
		return linked{}, err
	}
	hostBox, newBox := memMailboxes()
	defer hostBox.Close()
	if err := newBox.Send(ctx, n.Hello()); err != nil {
		return linked{}, err
	}
	code := n.Code("demo:in-process", wire.MailboxID{})
	l, err := hc.BeginLink(ctx, code, hostBox)
	if err != nil {
		return linked{}, fmt.Errorf("link a device to %s: %w", holder.User, err)
	}
	offer, err := newBox.Receive(ctx)
	if err != nil {
		return linked{}, err
	}
	check, o, err := n.TakeOffer(offer)
	if err != nil {
		return linked{}, err
	}
	if check != l.Check() {
		return linked{}, fmt.Errorf("the two screens show %s and %s", l.Check(), check)
	}
	addr := engine.Address{User: o.User, Device: o.Number}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		return linked{}, err
	}
	if err := newBox.Send(ctx, n.Join(id)); err != nil {
		return linked{}, err
	}
	type finished struct {
		res engine.LinkResult
		err error
	}
	fin := make(chan finished, 1)
	go func() {
		// The demo's profiles take every stranger's messages (no
		// requests): the laptop gets the same setting.
		res, err := l.Finish(ctx, engine.HistoryChoice{Mode: engine.HistoryNone}, true, nil)
		fin <- finished{res, err}
	}()
	pkgMsg, err := newBox.Receive(ctx)
	if err != nil {
		hostBox.Close()
		f := <-fin
		return linked{}, errors.Join(err, f.err)
	}
	pkg, err := n.TakePackage(pkgMsg)
	if err != nil {
		hostBox.Close()
		<-fin
		return linked{}, err
	}

	w.mu.Lock()
	d := w.devs[addr]
	if d == nil {
		d = &device{addr: addr, notes: make(chan eventlog.Entry, 64), policy: w.policy}
		w.devs[addr] = d
	}
	d.install++
	d.dir = filepath.Join(w.dir, fmt.Sprintf("%s-%d-%d", addr.User, addr.Device, d.install))
	install := d.install
	w.mu.Unlock()
	opts, faults := w.openOptions(d, install)
	prof, err := w.profiles.CreateLinked(ctx, d.dir, id, o.Number, pkg, opts)
	if err != nil {
		hostBox.Close()
		<-fin
		return linked{}, fmt.Errorf("create %s: %w", addr, err)
	}
	_ = newBox.Send(ctx, n.Done())
	f := <-fin
	if f.err != nil {
		prof.Close()
		return linked{}, f.err
	}
	if err := prof.Engine().RefreshPreKeys(ctx); err != nil {
		prof.Close()
		return linked{}, fmt.Errorf("publish prekeys of %s: %w", addr, err)
	}
	a := w.start(d, prof, faults())
	go func() {
		for {
			select {
			case <-a.Events:
			case <-a.Notes:
			case <-a.Done:
				return
			}
		}
	}()
	return linked{device: addr, check: check, generation: f.res.List.Generation}, nil
}

// linkCmd links a laptop to the account of pane i's profile, once: a
// second press says it is there.
func (m *Model) linkCmd(i int) tea.Cmd {
	w, self := m.world, m.chat.Pane(i).Self
	return func() tea.Msg {
		if s := w.siblings(self); len(s) > 0 {
			return demoMsg{pane: i, what: "link", entries: []eventlog.Entry{{At: w.now(), Name: "demo", Level: eventlog.Demo,
				Text: s[0].String() + " is linked already: a second device of " + self.User}}}
		}
		if err := w.keepLists(w.ctx); err != nil {
			return demoMsg{pane: i, what: "link", err: err}
		}
		l, err := w.linkDevice(w.ctx, self)
		if err != nil {
			return demoMsg{pane: i, what: "link", err: err}
		}
		return demoMsg{pane: i, what: "link", entries: []eventlog.Entry{{At: w.now(), Name: "demo_link", Level: eventlog.Demo,
			Text: fmt.Sprintf("%s linked %s (its laptop, no pane): both screens showed %s; device list generation %d", self, l.device, l.check, l.generation)}}}
	}
}

// siblings are the other open devices of self's person in the demo.
func (w *world) siblings(self engine.Address) []engine.Address {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []engine.Address
	for a, d := range w.devs {
		if a.User == self.User && a != self && d.prof != nil {
			out = append(out, a)
		}
	}
	return out
}

// commitOnLaptop commits on bob's laptop what is pending there, once
// something is (the envelope may still be on its way).
func commitOnLaptop(m *Model) tea.Cmd {
	w := m.world
	commit := w.commitAllCmd(1, laptop)
	return func() tea.Msg {
		if err := w.waitPending(laptop, 2); err != nil {
			return demoMsg{pane: 1, what: "commit", err: err}
		}
		return commit()
	}
}

// waitPending waits, at most arrivalWait, until n messages are pending on
// addr.
func (w *world) waitPending(addr engine.Address, n int) error {
	ctx, cancel := context.WithTimeout(w.ctx, arrivalWait)
	defer cancel()
	for {
		c := w.client(addr)
		if c == nil {
			return fmt.Errorf("%s is closed", addr)
		}
		page, err := c.PendingInbound(ctx, engine.PageQuery{Limit: n})
		if err != nil || len(page) >= n {
			return err
		}
		select {
		case <-ctx.Done():
			return nil // commit what there is; the step's check says what is missing
		case <-time.After(checkPoll):
		}
	}
}

// laptopScenario is guided scenario 9: alice's message is in flight to
// bob's phone while bob links his laptop; the laptop gets its own lane,
// bob commits there, and his phone learns the decision from his laptop.
func laptopScenario() scenario {
	const (
		first  = "dinner at eight?"
		second = "bring your laptop"
	)
	bob := demoBob
	return scenario{name: "second device mid-flight", steps: []step{
		{on: 1, keys: demoCtl('h'), do: keepListsCmd, done: all(switches(bob, true, 0, 0), listsKept),
			say: "bob's phone (bob/1) is out of reach: envelopes to it wait at the relay. From now on the demo keeps device lists: each account's list is at the relay."},
		{on: 0, keys: write(first), done: all(stored(demoAlice, bob, first, first, false), at(first, "unknown")),
			say: "alice writes: relay accepted, not on bob's phone yet. Her list of bob's devices names the phone alone: one lane."},
		{on: 1, keys: demoCtl('l'), done: listNames(bob, laptop),
			say: "bob links his laptop from his phone (ctrl+x l): the code, the same six digits on both screens, then the phone signs his device list at generation 2 with bob/2 in it and the relay takes it."},
		{on: 0, keys: write(second), done: all(stored(demoAlice, bob, second, second, false), personLane(first, laptop), personLane(second, laptop)),
			say: "alice writes again. The round after a send asks the relay whether bob's list is still the one she holds: it is not, so each of her messages still in flight gets a lane to the laptop, same logical ID."},
		{on: 1, do: commitOnLaptop, done: all(atDevice(first, laptop, "committed"), atDevice(second, laptop, "committed")),
			say: "bob commits on his laptop. Its ACKs go to alice, and its decisions go to his phone on his own lane."},
		{on: 1, keys: demoCtl('h'), done: all(switches(bob, false, 0, 0), decidedOn(first, laptop), decidedOn(second, laptop), sender(first, engine.SentAcknowledged), sender(second, engine.SentAcknowledged)),
			say: "The phone is back: it finalizes both messages as committed on bob/2 without asking (no bell) and acknowledges alice's lanes. alice's ticks read ✓ 2/2 devices."},
		{on: 0, done: all(onceEach, onceOn(laptop, first), onceOn(laptop, second)),
			say: "Done. The exactly-once line counts per person: each message is once in the history of each of bob's devices, decided once for bob."},
	}}
}

// listNames: a's account list names dev as active.
func listNames(a, dev engine.Address) check {
	return func(v *checkView) error {
		c, err := v.client(a)
		if err != nil {
			return err
		}
		acc, err := c.Account(v.ctx)
		if err != nil {
			return err
		}
		for _, x := range engine.ActiveAddresses(acc.List) {
			if x == dev {
				if _, err := v.client(dev); err != nil {
					return err
				}
				return nil
			}
		}
		return fmt.Errorf("%s's device list (generation %d) does not name %s", a.User, acc.List.Generation, dev)
	}
}

// personLane: the sender of key holds a lane of it to dev.
func personLane(key string, dev engine.Address) check {
	return func(v *checkView) error {
		m, err := v.marked(key)
		if err != nil {
			return err
		}
		c, err := v.client(m.from)
		if err != nil {
			return err
		}
		lanes, err := c.PersonLanes(v.ctx, m.to, m.id)
		if err != nil {
			return err
		}
		for _, l := range lanes {
			if l.Recipient == dev && !l.Own {
				return nil
			}
		}
		return fmt.Errorf("%q has no lane to %s at %s yet", key, dev, m.from)
	}
}

// atDevice: the message marked key is in one of states at dev.
func atDevice(key string, dev engine.Address, states ...string) check {
	return func(v *checkView) error {
		m, err := v.marked(key)
		if err != nil {
			return err
		}
		c, err := v.client(dev)
		if err != nil {
			return err
		}
		l, err := c.Trace(v.ctx, m.from, m.id, engine.DirectionIn)
		if err != nil {
			return err
		}
		for _, s := range states {
			if l.State == s {
				return nil
			}
		}
		return fmt.Errorf("%q is %s at %s (want %s)", key, l.State, dev, states[0])
	}
}

// decidedOn: the receiver of key holds it committed, decided on dev.
func decidedOn(key string, dev engine.Address) check {
	return func(v *checkView) error {
		m, err := v.marked(key)
		if err != nil {
			return err
		}
		c, err := v.client(m.to)
		if err != nil {
			return err
		}
		h, err := c.History(v.ctx, m.from, 0, verdictScan)
		if err != nil {
			return err
		}
		for _, e := range h {
			if e.Direction == engine.DirectionIn && e.ID == m.id {
				if e.DecidedOn == nil || *e.DecidedOn != dev {
					return fmt.Errorf("%q is in %s's history, not decided on %s", key, m.to, dev)
				}
				return nil
			}
		}
		return fmt.Errorf("%q is not in %s's history yet", key, m.to)
	}
}

// onceOn: the message marked key is in dev's history exactly once.
func onceOn(dev engine.Address, key string) check {
	return func(v *checkView) error {
		m, err := v.marked(key)
		if err != nil {
			return err
		}
		c, err := v.client(dev)
		if err != nil {
			return err
		}
		h, err := c.History(v.ctx, m.from, 0, verdictScan)
		if err != nil {
			return err
		}
		n := 0
		for _, e := range h {
			if e.Direction == engine.DirectionIn && e.ID == m.id {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%q is in %s's history %d times, not once", key, dev, n)
		}
		return nil
	}
}
