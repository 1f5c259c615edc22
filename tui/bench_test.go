package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/eventlog"
)

// The benchmark's data: alice's profile holds viewHistory history rows with
// bob and viewPending pending messages (half received, half sent).
const (
	viewHistory = 100_000
	viewPending = 10_000
)

// benchDevice is a real profile on disk, connected to an in-process relay.
type benchDevice struct {
	addr engine.Address
	c    *engine.Client
}

func newBenchDevice(b *testing.B, net *enginetest.Network, dir string, addr engine.Address) *benchDevice {
	ctx := context.Background()
	path := filepath.Join(dir, addr.User)
	st, err := store.Create(ctx, path, demoPassphrase, store.Options{KDF: demoKDF})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := engine.CreateProfile(ctx, st, addr, "memory://", nil, time.Now()); err != nil {
		b.Fatal(err)
	}
	st.Close()
	if st, err = store.Open(ctx, path, demoPassphrase, store.Options{}); err != nil {
		b.Fatal(err)
	}
	ep := net.Endpoint(addr)
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: ep, BatchSize: 1024, EventBuffer: 16})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.RefreshPreKeys(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &benchDevice{addr: addr, c: c}
}

func (d *benchDevice) sendMany(b *testing.B, to engine.Address, n int) {
	for sent := 0; sent < n; {
		k := min(1000, n-sent)
		reqs := make([]engine.SendRequest, k)
		for i := range reqs {
			reqs[i] = engine.SendRequest{Peer: to, Body: []byte(fmt.Sprintf("message %d from %s, long enough to need a little room on a line", sent+i, d.addr))}
		}
		res, err := d.c.SendBatch(context.Background(), reqs)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		sent += k
	}
}

// receiveAll stages and processes everything waiting at the relay.
func (d *benchDevice) receiveAll(b *testing.B) {
	for {
		res, err := d.c.Sync(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Received) == 0 {
			return
		}
	}
}

func (d *benchDevice) commitAll(b *testing.B) {
	ctx := context.Background()
	for {
		page, err := d.c.PendingInbound(ctx, engine.PageQuery{Limit: 1000})
		if err != nil {
			b.Fatal(err)
		}
		if len(page) == 0 {
			return
		}
		reqs := make([]engine.FinalizeRequest, len(page))
		for i, m := range page {
			reqs[i] = engine.FinalizeRequest{Sender: m.Sender, ID: m.ID, Outcome: engine.OutcomeCommitted}
		}
		if _, err := d.c.FinalizeBatch(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
}

// drain empties a client's event channel (nobody read it while building).
func drain(c *engine.Client) {
	for {
		select {
		case <-c.Events():
		default:
			return
		}
	}
}

// settleModel runs the model's commands until only the ones that wait
// (the event listener, the ticker) are left.
func settleModel(m Model, cmds ...tea.Cmd) Model {
	queue := cmds
	for len(queue) > 0 {
		cmd := queue[0]
		queue = queue[1:]
		if cmd == nil {
			continue
		}
		ch := make(chan tea.Msg, 1)
		go func() { ch <- cmd() }()
		var msg tea.Msg
		select {
		case msg = <-ch:
		case <-time.After(200 * time.Millisecond):
			continue // a listener or a tick
		}
		switch msg := msg.(type) {
		case tea.BatchMsg:
			queue = append(queue, msg...)
			continue
		case TickMsg, nil:
			continue
		default:
			var next tea.Model
			next, cmd = m.Update(msg)
			m = next.(Model)
			queue = append(queue, cmd)
		}
	}
	return m
}

// BenchmarkRootView measures one frame of the root View() at 160x48 for a
// profile with 100,000 history rows with its peer and 10,000 pending
// messages (5,000 received, 5,000 sent), all in a real store: the panels
// hold one page each, so a frame does not depend on the store's size.
func BenchmarkRootView(b *testing.B) {
	net := enginetest.NewNetwork()
	dir := b.TempDir()
	alice := newBenchDevice(b, net, dir, demoAlice)
	bob := newBenchDevice(b, net, dir, demoBob)
	committed := viewHistory - viewPending/2
	bob.sendMany(b, alice.addr, committed)
	alice.receiveAll(b)
	alice.commitAll(b)
	bob.sendMany(b, alice.addr, viewPending/2)
	alice.receiveAll(b)
	alice.sendMany(b, bob.addr, viewPending/2)
	drain(alice.c)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	s := &Attachment{Client: alice.c, Events: alice.c.Events(), Notes: make(chan eventlog.Entry), Done: done,
		State: func() string { return "connected" }}
	m := New(ctx, themes.MustGet("dark"), discard, time.Now)
	m.AddPane(alice.addr, s, PaneOptions{Compose: true, Peer: bob.addr})
	cmds := append([]tea.Cmd{}, m.init...)
	next, cmd := m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m = settleModel(next.(Model), append(cmds, cmd)...)
	pn := m.panes[0]
	if pn.in().Total() != viewPending/2 || pn.out().Total() != viewPending/2 || len(pn.tl().Entries()) == 0 {
		b.Fatalf("the panels show %d received, %d sent, %d history entries; want %d, %d and a page",
			pn.in().Total(), pn.out().Total(), len(pn.tl().Entries()), viewPending/2, viewPending/2)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}
