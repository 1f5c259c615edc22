package engine_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
	"pgregory.net/rapid"
)

// The reliability model: random sends, commits, discards, retries, abandons
// and restarts on real profiles, over a relay that is either honest with
// faults (drops and duplicates, FIFO kept) or an adversary that decides the
// fate of every envelope. After every step the safety properties are
// checked against what the test knows; once the network turns honest, a
// bounded number of rounds must deliver everything exactly once.

// message is one application message the model knows of.
type message struct {
	from, to int
	body     string
}

// model is what the test knows the devices must hold.
type model struct {
	sent      map[wire.LogicalID]message
	pending   []map[wire.LogicalID]bool // sent by device i, not yet cleared or abandoned
	finalized []map[wire.LogicalID]bool // at recipient i
	committed []map[wire.LogicalID]bool // at recipient i
	abandoned map[wire.LogicalID]bool
	discarded map[wire.LogicalID]bool
}

// simulation is one case of the model.
type simulation struct {
	rt        *rapid.T
	w         *world
	devs      []*device
	m         *model
	adversary bool
	serial    int
	steps     int
	// positions maps every chain position an envelope was encrypted at
	// (sender, recipient, ratchet key, message number) to that envelope's
	// ID: one position, one encryption.
	positions map[position]wire.EnvelopeID
	checked   int // envelopes of w.net.Seen() checked so far
	// outcomes counts the receive results by name, to show what the cases
	// exercised.
	outcomes map[string]int
}

type position struct {
	from, to string
	key      [32]byte
	n        uint32
}

func newSimulation(t *testing.T, rt *rapid.T, n int, adversary bool) *simulation {
	s := &simulation{rt: rt, w: newWorld(t), adversary: adversary, positions: map[position]wire.EnvelopeID{}, outcomes: map[string]int{}}
	// Keys and IDs come from the case, so that its seed replays it.
	seed := rapid.Uint64().Draw(rt, "random seed")
	s.w.seed = &seed
	s.m = &model{sent: map[wire.LogicalID]message{}, abandoned: map[wire.LogicalID]bool{}, discarded: map[wire.LogicalID]bool{}}
	for i := 0; i < n; i++ {
		s.devs = append(s.devs, s.w.device(fmt.Sprintf("d%d/1", i)))
		s.m.pending = append(s.m.pending, map[wire.LogicalID]bool{})
		s.m.finalized = append(s.m.finalized, map[wire.LogicalID]bool{})
		s.m.committed = append(s.m.committed, map[wire.LogicalID]bool{})
		if adversary {
			s.w.net.Hold(s.devs[i].addr)
		}
	}
	return s
}

// pair draws a sender and a distinct recipient.
func (s *simulation) pair(rt *rapid.T) (int, int) {
	from := rapid.IntRange(0, len(s.devs)-1).Draw(rt, "from")
	to := (from + 1 + rapid.IntRange(0, len(s.devs)-2).Draw(rt, "to")) % len(s.devs)
	return from, to
}

// apply checks and records what a device's receive results say.
func (s *simulation) apply(i int, res []engine.ReceiveResult) {
	for _, r := range res {
		name := r.Kind.String()
		if r.Kind == engine.ResultError {
			name = engine.ErrorName(r.Err)
		}
		s.outcomes[name]++
		if r.RecoveryRequested {
			s.outcomes["recovery_requested"]++
		}
		if r.Kind != engine.ResultAcknowledgement || !r.Cleared {
			continue
		}
		msg, ok := s.m.sent[r.ID]
		if !ok || msg.from != i || !s.m.pending[i][r.ID] {
			s.rt.Fatalf("safety: an ACK from %s cleared %x, which %s did not hold", r.Sender, r.ID, s.devs[i].addr)
		}
		if s.devs[msg.to].addr != r.Sender {
			s.rt.Fatalf("safety: an ACK from %s cleared %x, sent to %s", r.Sender, r.ID, s.devs[msg.to].addr)
		}
		if !s.m.finalized[msg.to][r.ID] {
			s.rt.Fatalf("safety: an ACK for %x arrived before %s finalized it", r.ID, s.devs[msg.to].addr)
		}
		delete(s.m.pending[i], r.ID)
	}
}

func (s *simulation) sync(i int) {
	res, err := s.devs[i].c.Sync(s.w.ctx)
	if err != nil {
		s.rt.Fatalf("%s syncs: %v", s.devs[i].addr, err)
	}
	s.apply(i, res.Received)
}

func (s *simulation) retry(from, to int) {
	if _, err := s.devs[from].c.Retry(s.w.ctx, s.devs[to].addr); err != nil {
		s.rt.Fatalf("%s retries to %s: %v", s.devs[from].addr, s.devs[to].addr, err)
	}
}

// close closes every device of the case (a run makes hundreds of cases).
func (s *simulation) close() {
	for _, d := range s.devs {
		if d.c != nil {
			d.c.Close()
			d.c = nil
		}
	}
}

func (s *simulation) finalize(i int, id wire.LogicalID, sender engine.Address, commit bool) {
	var err error
	if commit {
		_, err = s.devs[i].c.Commit(s.w.ctx, sender, id)
		s.m.committed[i][id] = true
	} else {
		_, err = s.devs[i].c.Discard(s.w.ctx, sender, id, engine.DiscardRejected)
		s.m.discarded[id] = true
	}
	if err != nil {
		s.rt.Fatalf("%s finalizes %x: %v", s.devs[i].addr, id, err)
	}
	s.m.finalized[i][id] = true
}

// check verifies the safety properties: every device holds exactly the
// pending messages the model says, no history holds a message twice or a
// body other than the one sent, and no chain position carried two
// encryptions.
func (s *simulation) check() {
	ctx := s.w.ctx
	for i, d := range s.devs {
		out, err := d.c.PendingOutbound(ctx, engine.PageQuery{Limit: 1000})
		if err != nil {
			s.rt.Fatal(err)
		}
		got := map[wire.LogicalID]bool{}
		for _, o := range out {
			got[o.ID] = true
		}
		if len(got) != len(s.m.pending[i]) {
			s.rt.Fatalf("safety: %s holds %d pending, the model %d", d.addr, len(got), len(s.m.pending[i]))
		}
		for id := range s.m.pending[i] {
			if !got[id] {
				s.rt.Fatalf("safety: %s lost pending message %x", d.addr, id)
			}
		}
		in := 0
		for j, p := range s.devs {
			if j == i {
				continue
			}
			h, err := d.c.History(ctx, p.addr, 0, 1000)
			if err != nil {
				s.rt.Fatal(err)
			}
			seen := map[wire.LogicalID]bool{}
			for _, e := range h {
				if e.Direction != engine.DirectionIn {
					continue
				}
				if seen[e.ID] {
					s.rt.Fatalf("safety: %s's history holds %x twice", d.addr, e.ID)
				}
				seen[e.ID] = true
				if msg := s.m.sent[e.ID]; string(e.Body) != msg.body || msg.from != j {
					s.rt.Fatalf("safety: %s's history holds %q from %s for %x, sent as %q by %d", d.addr, e.Body, p.addr, e.ID, msg.body, msg.from)
				}
			}
			in += len(seen)
		}
		if in != len(s.m.committed[i]) {
			s.rt.Fatalf("safety: %s's history holds %d messages, the model %d", d.addr, in, len(s.m.committed[i]))
		}
	}
	s.checkPositions()
}

// checkPositions reads the envelopes the relay accepted since the last
// check: a chain position (a ratchet key and a message number) that carried
// two different envelopes would be a key used twice.
func (s *simulation) checkPositions() {
	seen := s.w.net.Seen()
	for _, raw := range seen[s.checked:] {
		env, err := wire.DecodeEnvelope(raw)
		if err != nil {
			s.rt.Fatal(err)
		}
		var h wire.RatchetHeader
		switch env.Type {
		case wire.EnvelopePreKey:
			pm, err := wire.DecodePreKeyMessage(env.Payload)
			if err != nil {
				s.rt.Fatal(err)
			}
			h = pm.Message.Header
		case wire.EnvelopeRatchet:
			m, err := wire.DecodeRatchetMessage(env.Payload)
			if err != nil {
				s.rt.Fatal(err)
			}
			h = m.Header
		default:
			continue
		}
		p := position{env.Sender, env.Recipient, h.RatchetKey, h.MessageNumber}
		if prev, ok := s.positions[p]; ok && prev != env.ID {
			s.rt.Fatalf("safety: %s encrypted two envelopes (%x, %x) at one chain position of its key %x", env.Sender, prev[:4], env.ID[:4], h.RatchetKey[:4])
		}
		s.positions[p] = env.ID
	}
	s.checked = len(seen)
}

// actions are the steps the devices take, and, with an adversary, the
// steps the relay takes.
func (s *simulation) actions() map[string]func(*rapid.T) {
	acts := map[string]func(*rapid.T){
		"send": func(rt *rapid.T) {
			from, to := s.pair(rt)
			s.serial++
			body := fmt.Sprintf("message %d", s.serial)
			id, err := s.devs[from].c.Send(s.w.ctx, s.devs[to].addr, []byte(body))
			if err != nil {
				rt.Fatal(err)
			}
			s.m.sent[id] = message{from, to, body}
			s.m.pending[from][id] = true
		},
		"sync": func(rt *rapid.T) {
			s.sync(rapid.IntRange(0, len(s.devs)-1).Draw(rt, "device"))
		},
		"commit":  func(rt *rapid.T) { s.finalizeOne(rt, true) },
		"discard": func(rt *rapid.T) { s.finalizeOne(rt, false) },
		"retry": func(rt *rapid.T) {
			s.retry(s.pair(rt))
		},
		"abandon": func(rt *rapid.T) {
			i := rapid.IntRange(0, len(s.devs)-1).Draw(rt, "from")
			var ids []wire.LogicalID
			for id := range s.m.pending[i] {
				ids = append(ids, id)
			}
			if len(ids) == 0 {
				return // nothing pending: a step that does nothing
			}
			sortIDs(ids)
			id := ids[rapid.IntRange(0, len(ids)-1).Draw(rt, "which")]
			if err := s.devs[i].c.Abandon(s.w.ctx, s.devs[s.m.sent[id].to].addr, id); err != nil {
				rt.Fatal(err)
			}
			delete(s.m.pending[i], id)
			s.m.abandoned[id] = true
		},
		"restart": func(rt *rapid.T) {
			s.devs[rapid.IntRange(0, len(s.devs)-1).Draw(rt, "device")].reopen()
		},
		"tick": func(rt *rapid.T) {
			s.w.clock.Advance(time.Duration(rapid.IntRange(1, 90).Draw(rt, "seconds")) * time.Second)
		},
		"": func(rt *rapid.T) {
			s.steps++
			s.check()
		},
	}
	if !s.adversary {
		acts["drop"] = func(rt *rapid.T) {
			from, to := s.pair(rt)
			s.w.net.DropNext(s.devs[from].addr, s.devs[to].addr, 1)
		}
		acts["duplicate"] = func(rt *rapid.T) {
			from, to := s.pair(rt)
			s.w.net.DuplicateNext(s.devs[from].addr, s.devs[to].addr, 1)
		}
		return acts
	}
	// held draws an envelope the relay holds; false when it holds none
	// for the recipient drawn (the step then does nothing).
	held := func(rt *rapid.T) (engine.Address, int, bool) {
		to := s.devs[rapid.IntRange(0, len(s.devs)-1).Draw(rt, "recipient")].addr
		n := len(s.w.net.Held(to))
		if n == 0 {
			return to, 0, false
		}
		return to, rapid.IntRange(0, n-1).Draw(rt, "envelope"), true
	}
	// The relay delivers any envelope it holds, in any order (also within
	// one sender and recipient), drops one, replays any envelope it ever
	// saw, and hands a one-time prekey out twice. Holding an envelope
	// without bound is doing none of these.
	acts["deliver"] = func(rt *rapid.T) {
		if to, i, ok := held(rt); ok {
			s.w.net.DeliverHeld(to, i)
		}
	}
	acts["deliver-first"] = func(rt *rapid.T) {
		to := s.devs[rapid.IntRange(0, len(s.devs)-1).Draw(rt, "recipient")].addr
		s.w.net.DeliverHeld(to, 0)
	}
	acts["drop"] = func(rt *rapid.T) {
		if to, i, ok := held(rt); ok {
			s.w.net.DropHeld(to, i)
		}
	}
	acts["replay"] = func(rt *rapid.T) {
		seen := s.w.net.Seen()
		if len(seen) == 0 {
			return
		}
		raw := seen[rapid.IntRange(0, len(seen)-1).Draw(rt, "envelope")]
		env, err := wire.DecodeEnvelope(raw)
		if err != nil {
			rt.Fatal(err)
		}
		s.w.net.Inject(engine.MustParseAddress(env.Recipient), raw)
	}
	acts["repeat-one-time-prekey"] = func(rt *rapid.T) {
		s.w.net.RepeatOneTime(s.devs[rapid.IntRange(0, len(s.devs)-1).Draw(rt, "device")].addr)
	}
	return acts
}

func (s *simulation) finalizeOne(rt *rapid.T, commit bool) {
	i := rapid.IntRange(0, len(s.devs)-1).Draw(rt, "device")
	in, err := s.devs[i].c.PendingInbound(s.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		rt.Fatal(err)
	}
	if len(in) == 0 {
		return // nothing pending: a step that does nothing
	}
	msg := in[rapid.IntRange(0, len(in)-1).Draw(rt, "which")]
	s.finalize(i, msg.ID, msg.Sender, commit)
}

// heal ends the adversary: it delivers or drops (its choice) every envelope
// it still holds, and the network is honest from then on.
func (s *simulation) heal(rt *rapid.T) {
	for _, d := range s.devs {
		for i := len(s.w.net.Held(d.addr)) - 1; i >= 0; i-- {
			if s.adversary && rapid.Bool().Draw(rt, "drop withheld") {
				s.w.net.DropHeld(d.addr, i)
			}
		}
	}
	s.w.net.Heal()
}

// converge runs at most rounds rounds of sync, commit and retry on every
// device, with the clock moving on so that recovery requests may repeat,
// and reports whether everything arrived: nothing pending anywhere, and
// every message that was neither abandoned nor discarded in its recipient's
// history.
func (s *simulation) converge(rounds int) bool {
	for round := 0; round < rounds; round++ {
		for i, d := range s.devs {
			s.sync(i)
			in, err := d.c.PendingInbound(s.w.ctx, engine.PageQuery{Limit: 1000})
			if err != nil {
				s.rt.Fatal(err)
			}
			for _, msg := range in {
				s.finalize(i, msg.ID, msg.Sender, true)
			}
		}
		for i := range s.devs {
			s.sync(i)
			for j := range s.devs {
				if j != i {
					s.retry(i, j)
				}
			}
		}
		s.w.clock.Advance(engine.RecoveryRepeat)
		if s.done() {
			s.check()
			return true
		}
	}
	s.check()
	return false
}

func (s *simulation) done() bool {
	for i, d := range s.devs {
		if len(s.m.pending[i]) > 0 || d.pendingIn() > 0 {
			return false
		}
	}
	for id, msg := range s.m.sent {
		if !s.m.abandoned[id] && !s.m.discarded[id] && !s.m.committed[msg.to][id] {
			return false
		}
	}
	return true
}

func sortIDs(ids []wire.LogicalID) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && string(ids[j][:]) < string(ids[j-1][:]); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

// TestReliabilityProperties drives two devices on real stores over an honest
// relay with faults (drops and duplicates; FIFO per pair kept): after every
// step nothing a sender still holds is lost, nothing is in a history twice
// and every ACK clears only its own message; with the network healed,
// everything converges.
func TestReliabilityProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := newSimulation(t, rt, 2, false)
		defer s.close()
		rt.Repeat(s.actions())
		s.heal(rt)
		if !s.converge(8) {
			rt.Fatalf("liveness: messages still pending after the network healed")
		}
	})
}

// TestAdversary is the hostile relay: two or three devices, and a relay
// that may drop, duplicate, withhold without bound and deliver later,
// reorder (also within one sender and recipient), replay any envelope it
// ever saw and hand a one-time prekey out twice, interleaved with sends,
// commits, discards, retries, abandons, restarts and the clock moving on.
// Safety always holds (see check); once the adversary stops (each withheld
// envelope delivered or dropped, as it likes), at most ten rounds of sync,
// commit and retry leave every message that was not abandoned or discarded
// in its recipient's history exactly once and nothing pending.
//
// ADVERSARY_CASES sets the number of cases (default 300; make adversary
// runs more). A failure prints the rapid seed that replays it.
func TestAdversary(t *testing.T) {
	cases := 300
	if v, err := strconv.Atoi(os.Getenv("ADVERSARY_CASES")); err == nil && v > 0 {
		cases = v
	}
	if testing.Short() {
		cases = 20
	}
	// Long runs of steps: the hard cases need several sessions to come
	// and go.
	for name, v := range map[string]string{"rapid.checks": strconv.Itoa(cases), "rapid.steps": "80"} {
		old := flag.Lookup(name).Value.String()
		flag.Set(name, v)
		defer flag.Set(name, old)
	}
	var ran, steps, stuck atomic.Int64
	var mu sync.Mutex
	outcomes := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		ran.Add(1)
		s := newSimulation(t, rt, rapid.IntRange(2, 3).Draw(rt, "devices"), true)
		defer func() {
			steps.Add(int64(s.steps))
			s.close()
			mu.Lock()
			for k, v := range s.outcomes {
				outcomes[k] += v
			}
			mu.Unlock()
		}()
		rt.Repeat(s.actions())
		s.heal(rt)
		if !s.converge(10) {
			stuck.Add(1)
			rt.Fatalf("liveness: messages still pending ten rounds after the adversary stopped")
		}
	})
	if !t.Failed() {
		fmt.Printf("adversary: %d cases, %d steps, 0 safety violations, %d stuck\n", ran.Load(), steps.Load(), stuck.Load())
		t.Logf("receive outcomes over all cases: %v", outcomes)
	}
}
