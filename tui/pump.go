package tui

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
)

// Pump timings.
const (
	pollInterval     = 20 * time.Millisecond // an empty Receive (relays that do not block)
	maintainInterval = time.Hour
	maxPumpBackoff   = 5 * time.Second
)

// gate holds a pump back while delivery to its profile is held (a demo
// control) or its relay link is unplugged; envelopes then wait at the relay.
type gate struct {
	mu        sync.Mutex
	held      bool
	unplugged bool
	open      chan struct{} // closed while the gate is open
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

// set changes the switches and reports the new state.
func (g *gate) set(held, unplugged *bool) (bool, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	wasOpen := !g.held && !g.unplugged
	if held != nil {
		g.held = *held
	}
	if unplugged != nil {
		g.unplugged = *unplugged
	}
	isOpen := !g.held && !g.unplugged
	switch {
	case wasOpen && !isOpen:
		g.open = make(chan struct{})
	case !wasOpen && isOpen:
		close(g.open)
	}
	return g.held, g.unplugged
}

func (g *gate) state() (held, unplugged bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held, g.unplugged
}

// wait blocks while the gate is shut; it reports false when ctx ended.
func (g *gate) wait(ctx context.Context) bool {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// pump moves envelopes from the relay into the engine for one open client:
// Receive, Stage (durable), Acknowledge the relay's lease, ProcessStaged. It
// also keeps the prekeys fresh. It runs in its own goroutine until Stop.
type pump struct {
	client *engine.Client
	relay  engine.Relay
	gate   *gate
	notes  chan eventlog.Entry
	log    *slog.Logger
	now    func() time.Time
	cancel context.CancelFunc
	done   chan struct{}
}

// startPump starts the pump's goroutine; maintain says whether it runs
// Maintain at once (the demo did it already).
func startPump(parent context.Context, c *engine.Client, r engine.Relay, g *gate, notes chan eventlog.Entry, log *slog.Logger, now func() time.Time, maintain bool) *pump {
	ctx, cancel := context.WithCancel(parent)
	p := &pump{client: c, relay: r, gate: g, notes: notes, log: log, now: now, cancel: cancel, done: make(chan struct{})}
	go p.run(ctx, maintain)
	return p
}

// Stop ends the pump and waits for its goroutine.
func (p *pump) Stop() {
	p.cancel()
	<-p.done
}

func (p *pump) note(name string, err error) {
	e := eventlog.Entry{At: p.now(), Name: name, Text: fmt.Sprintf("%s: %v", engine.ErrorName(err), err), Level: eventlog.Error}
	p.log.Warn("pump", "self", p.client.Self().String(), "what", name, "err", err)
	select {
	case p.notes <- e:
	default: // the screen is behind; the log file has it
	}
}

func (p *pump) run(ctx context.Context, maintain bool) {
	defer close(p.done)
	ctx = withKind(ctx, kindAck) // processing hands off ACKs only
	nextMaintain := time.Now().Add(maintainInterval)
	if maintain {
		nextMaintain = time.Now()
	}
	p.process(ctx) // rows staged before a crash come first
	backoff := pollInterval
	for {
		if time.Now().After(nextMaintain) {
			if err := p.client.Maintain(ctx); err != nil && ctx.Err() == nil {
				p.note("maintain_failed", err)
			}
			nextMaintain = time.Now().Add(maintainInterval)
		}
		if !p.gate.wait(ctx) {
			return
		}
		leased, err := p.relay.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.note("receive_failed", err)
			backoff = min(backoff*2, maxPumpBackoff)
			if !sleep(ctx, backoff) {
				return
			}
			continue
		}
		backoff = pollInterval
		if len(leased) == 0 {
			if !sleep(ctx, pollInterval) {
				return
			}
			continue
		}
		// Held meanwhile: keep the lease (the relay has the envelopes)
		// until release.
		if !p.gate.wait(ctx) {
			return
		}
		if _, err := p.client.Stage(ctx, leased); err != nil {
			if ctx.Err() == nil {
				p.note("stage_failed", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		rows := make([]uint64, len(leased))
		for i, l := range leased {
			rows[i] = l.Row
		}
		if err := p.relay.Acknowledge(ctx, rows); err != nil && ctx.Err() == nil {
			// Staged already: a redelivery is absorbed by the dedup.
			p.note("relay_ack_failed", err)
		}
		p.process(ctx)
	}
}

func (p *pump) process(ctx context.Context) {
	if _, err := p.client.ProcessStaged(ctx); err != nil && ctx.Err() == nil {
		p.note("process_failed", err)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
