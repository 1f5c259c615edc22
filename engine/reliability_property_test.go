package engine_test

import (
	"fmt"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
	"pgregory.net/rapid"
)

// model is what the test knows the two devices must hold.
type model struct {
	sent      map[wire.LogicalID]string // every message ever sent, by ID
	from      map[wire.LogicalID]int    // sender index
	pending   [2]map[wire.LogicalID]bool
	finalized [2]map[wire.LogicalID]bool // at the recipient
	committed [2]map[wire.LogicalID]bool
}

// TestReliabilityProperties drives two devices on real stores through random
// sends, deliveries, drops, duplicates, commits, discards, retries, abandons
// and restarts, checking after every step that nothing a sender still holds
// is lost, nothing is in a history twice and every ACK clears only its own
// message; at the end, with the network healed, everything converges.
func TestReliabilityProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := newWorld(t)
		devs := [2]*device{w.device("alice/1"), w.device("bob/1")}
		m := &model{sent: map[wire.LogicalID]string{}, from: map[wire.LogicalID]int{}}
		for i := range devs {
			m.pending[i] = map[wire.LogicalID]bool{}
			m.finalized[i] = map[wire.LogicalID]bool{}
			m.committed[i] = map[wire.LogicalID]bool{}
		}
		serial := 0
		apply := func(i int, res []engine.ReceiveResult) {
			for _, r := range res {
				if r.Kind != engine.ResultAcknowledgement {
					continue
				}
				if r.Cleared {
					if !m.pending[i][r.ID] {
						rt.Fatalf("an ACK cleared %x, which %s did not hold", r.ID, devs[i].addr)
					}
					if !m.finalized[1-i][r.ID] {
						rt.Fatalf("an ACK for %x arrived before %s finalized it", r.ID, devs[1-i].addr)
					}
					delete(m.pending[i], r.ID)
				}
			}
		}
		check := func() {
			for i, d := range devs {
				out, err := d.c.PendingOutbound(w.ctx, engine.PageQuery{Limit: 1000})
				if err != nil {
					rt.Fatal(err)
				}
				got := map[wire.LogicalID]bool{}
				for _, o := range out {
					got[o.ID] = true
				}
				if len(got) != len(m.pending[i]) {
					rt.Fatalf("%s holds %d pending, the model %d", d.addr, len(got), len(m.pending[i]))
				}
				for id := range m.pending[i] {
					if !got[id] {
						rt.Fatalf("%s lost pending message %x", d.addr, id)
					}
				}
				h, err := d.c.History(w.ctx, devs[1-i].addr, 0, 1000)
				if err != nil {
					rt.Fatal(err)
				}
				seen := map[wire.LogicalID]bool{}
				for _, e := range h {
					if e.Direction != engine.DirectionIn {
						continue
					}
					if seen[e.ID] {
						rt.Fatalf("%s's history holds %x twice", d.addr, e.ID)
					}
					seen[e.ID] = true
					if string(e.Body) != m.sent[e.ID] {
						rt.Fatalf("%s's history holds %q for %x, sent as %q", d.addr, e.Body, e.ID, m.sent[e.ID])
					}
				}
				if len(seen) != len(m.committed[i]) {
					rt.Fatalf("%s's history holds %d messages, the model %d", d.addr, len(seen), len(m.committed[i]))
				}
			}
		}
		finalize := func(rt *rapid.T, commit bool) {
			i := rapid.IntRange(0, 1).Draw(rt, "device")
			in, err := devs[i].c.PendingInbound(w.ctx, engine.PageQuery{Limit: 1000})
			if err != nil {
				rt.Fatal(err)
			}
			if len(in) == 0 {
				rt.Skip("nothing pending")
			}
			msg := in[rapid.IntRange(0, len(in)-1).Draw(rt, "which")]
			if commit {
				_, err = devs[i].c.Commit(w.ctx, msg.Sender, msg.ID)
				m.committed[i][msg.ID] = true
			} else {
				_, err = devs[i].c.Discard(w.ctx, msg.Sender, msg.ID, engine.DiscardRejected)
			}
			if err != nil {
				rt.Fatal(err)
			}
			m.finalized[i][msg.ID] = true
		}
		rt.Repeat(map[string]func(*rapid.T){
			"send": func(rt *rapid.T) {
				i := rapid.IntRange(0, 1).Draw(rt, "from")
				serial++
				body := fmt.Sprintf("message %d", serial)
				id, err := devs[i].c.Send(w.ctx, devs[1-i].addr, []byte(body))
				if err != nil {
					rt.Fatal(err)
				}
				m.sent[id], m.from[id] = body, i
				m.pending[i][id] = true
			},
			"sync": func(rt *rapid.T) {
				i := rapid.IntRange(0, 1).Draw(rt, "device")
				apply(i, devs[i].sync())
			},
			"drop": func(rt *rapid.T) {
				i := rapid.IntRange(0, 1).Draw(rt, "from")
				w.net.DropNext(devs[i].addr, devs[1-i].addr, 1)
			},
			"duplicate": func(rt *rapid.T) {
				i := rapid.IntRange(0, 1).Draw(rt, "from")
				w.net.DuplicateNext(devs[i].addr, devs[1-i].addr, 1)
			},
			"commit":  func(rt *rapid.T) { finalize(rt, true) },
			"discard": func(rt *rapid.T) { finalize(rt, false) },
			"retry": func(rt *rapid.T) {
				i := rapid.IntRange(0, 1).Draw(rt, "from")
				devs[i].retry(devs[1-i])
			},
			"abandon": func(rt *rapid.T) {
				i := rapid.IntRange(0, 1).Draw(rt, "from")
				var ids []wire.LogicalID
				for id := range m.pending[i] {
					ids = append(ids, id)
				}
				if len(ids) == 0 {
					rt.Skip("nothing pending")
				}
				id := ids[rapid.IntRange(0, len(ids)-1).Draw(rt, "which")]
				if err := devs[i].c.Abandon(w.ctx, devs[1-i].addr, id); err != nil {
					rt.Fatal(err)
				}
				delete(m.pending[i], id)
			},
			"restart": func(rt *rapid.T) {
				devs[rapid.IntRange(0, 1).Draw(rt, "device")].reopen()
			},
			"": func(rt *rapid.T) { check() },
		})
		// Heal the network and converge: everything still held arrives once.
		w.net.Heal()
		for round := 0; round < 8 && len(m.pending[0])+len(m.pending[1]) > 0; round++ {
			for i := range devs {
				apply(i, devs[i].sync())
				in, _ := devs[i].c.PendingInbound(w.ctx, engine.PageQuery{Limit: 1000})
				for _, msg := range in {
					if _, err := devs[i].c.Commit(w.ctx, msg.Sender, msg.ID); err != nil {
						rt.Fatal(err)
					}
					m.committed[i][msg.ID], m.finalized[i][msg.ID] = true, true
				}
			}
			for i := range devs {
				apply(i, devs[i].sync())
				devs[i].retry(devs[1-i])
			}
		}
		check()
		if n := len(m.pending[0]) + len(m.pending[1]); n != 0 {
			rt.Fatalf("%d messages still pending after the network healed", n)
		}
	})
}
