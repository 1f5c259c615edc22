package session

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// The sender chain rules of docs/protocol.md ("Sender chains") played
// against a hostile network, with the primitives of this package and a
// model of the engine around them: lanes pending until acknowledged and
// retried, chain messages held (bounded) until their announcement arrives,
// need-chain requests answered with the announcement again, a chain per
// generation, pairwise delivery to a member whose announcement is not
// acknowledged yet. The network drops, duplicates and reorders everything;
// a removed member keeps receiving a copy of every chain message (it
// colludes with the relay). This checks the design, not the engine: the
// engine does not send chains yet.

// simMaxHeld bounds a member's held chain messages, as MaxHeldPerSender
// bounds held group frames.
const simMaxHeld = 32

// simLane is one (item, member) lane: a chain's announcement (pos -1) or
// the message at pos of a chain.
type simLane struct {
	chain wire.ChainID
	pos   int64
	to    string
}

type simPacket struct {
	to       string
	lane     simLane
	announce *wire.ChainAnnounce // sender → member, pairwise
	chain    *wire.ChainMessage  // sender → member, envelope type 4
	pairwise string              // sender → member: the body on the pairwise session
	need     *wire.NeedChain     // member → sender
	ack      bool                // member → sender, for lane
	from     string
}

type simMember struct {
	chains map[wire.ChainID]*ReceiverChain
	held   []wire.ChainMessage
	opened map[string]int // body → times delivered to the user
}

func TestSenderChainSimulation(t *testing.T) {
	for seed := range uint64(24) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			simulate(t, seed, seed%2 == 1)
		})
	}
}

// simulate runs one seed. Optimistic: the sender seals to a member as soon
// as it sent the announcement once, not once it was acknowledged, so chain
// messages overtake their announcement and must be held and asked for.
func simulate(t *testing.T, seed uint64, optimistic bool) {
	rng := rand.New(rand.NewPCG(seed, 38))
	const sender = "alice/1"
	members := map[string]*simMember{}
	roster := map[string]bool{}
	join := func(a string) {
		members[a] = &simMember{chains: map[wire.ChainID]*ReceiverChain{}, opened: map[string]int{}}
		roster[a] = true
	}
	for _, a := range []string{"bob/1", "carol/1", "dave/1", "erin/1", "mallory/1"} {
		join(a)
	}
	var (
		generation = uint64(1)
		cur        *SenderChain
		chains     = map[wire.ChainID]*SenderChain{}
		ann        = map[wire.ChainID]map[string]wire.ChainAnnounce{} // what each entitled device is announced
		acked      = map[simLane]bool{}                               // announcement lanes acknowledged
		sent       = map[simLane]bool{}                               // announcement lanes sent once
		lanes      = map[simLane]simPacket{}                          // pending lanes and what they carry
		want       = map[string]map[string]bool{}                     // member → bodies it must get
		bodies     = map[simLane]string{}                             // (chain, position) → body
		allowed    = map[string]map[string]bool{}                     // member → bodies sent while it was one
		lossy      = true
		net        []simPacket
	)
	entitle := func(to string, a wire.ChainAnnounce) {
		ann[a.Chain][to] = a
		l := simLane{a.Chain, -1, to}
		lanes[l] = simPacket{to: to, lane: l, announce: &a}
	}
	rotate := func() {
		c, err := NewSenderChain(SystemRandom{}, wire.GroupID{38}, generation, chainNow)
		if err != nil {
			t.Fatal(err)
		}
		cur, chains[c.ID()] = c, c
		ann[c.ID()] = map[string]wire.ChainAnnounce{}
		for m := range roster {
			entitle(m, c.Announce(wire.LogicalID{}))
		}
	}
	send := func(p simPacket) {
		if p.announce != nil {
			sent[p.lane] = true
		}
		if lossy && rng.IntN(10) < 3 {
			return // lost
		}
		net = append(net, p)
		if lossy && rng.IntN(10) == 0 {
			net = append(net, p) // duplicated
		}
	}
	reply := func(p simPacket) { send(simPacket{to: sender, from: p.to, lane: p.lane, ack: true}) }

	// A member's side of one packet.
	memberGets := func(p simPacket) {
		m := members[p.to]
		open := func(msg wire.ChainMessage) {
			pt, err := m.chains[msg.Chain].Open(sender, msg)
			l := simLane{msg.Chain, int64(msg.Position), p.to}
			switch {
			case err == nil:
				m.opened[string(pt)]++
				send(simPacket{to: sender, from: p.to, lane: l, ack: true})
			case errors.Is(err, ErrDuplicateMessage): // a retry of what it has
				send(simPacket{to: sender, from: p.to, lane: l, ack: true})
			case errors.Is(err, ErrBeforeChainStart): // a copy sent before it was entitled
			default:
				t.Fatalf("%s opens position %d: %v", p.to, msg.Position, err)
			}
		}
		switch {
		case p.announce != nil:
			a := *p.announce
			if rc, ok := m.chains[a.Chain]; ok {
				if err := rc.Check(sender, a); err != nil {
					t.Fatalf("%s: the announcement again: %v", p.to, err)
				}
			} else {
				m.chains[a.Chain] = NewReceiverChain(sender, a)
			}
			reply(p)
			held := m.held
			m.held = nil
			for _, h := range held {
				if h.Chain == a.Chain {
					open(h)
				} else {
					m.held = append(m.held, h)
				}
			}
		case p.chain != nil:
			if _, ok := m.chains[p.chain.Chain]; ok {
				open(*p.chain)
				return
			}
			if len(m.held) == simMaxHeld {
				m.held = m.held[1:] // the oldest hold goes; its lane is retried
			}
			m.held = append(m.held, *p.chain)
			send(simPacket{to: sender, from: p.to, need: &wire.NeedChain{Generation: generation, Chain: p.chain.Chain, Position: p.chain.Position}})
		case p.pairwise != "":
			if m.opened[p.pairwise] == 0 { // deduplicated by logical ID
				m.opened[p.pairwise]++
			}
			reply(p)
		}
	}
	// The sender's side: an ACK ends a lane; a need-chain from an entitled
	// device brings its announcement again, from anyone else nothing (the
	// engine answers not_a_member).
	senderGets := func(p simPacket) {
		switch {
		case p.ack:
			if p.lane.pos < 0 {
				acked[p.lane] = true
			}
			delete(lanes, p.lane)
		case p.need != nil:
			if a, ok := ann[p.need.Chain][p.from]; ok {
				send(simPacket{to: p.from, lane: simLane{a.Chain, -1, p.from}, announce: &a})
			}
		}
	}
	sendMessage := func(body string) {
		msg, err := cur.Seal(SystemRandom{}, sender, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		bodies[simLane{msg.Chain, int64(msg.Position), ""}] = body
		for m := range roster {
			l := simLane{msg.Chain, int64(msg.Position), m}
			a := simLane{msg.Chain, -1, m}
			if acked[a] || (optimistic && sent[a]) {
				lanes[l] = simPacket{to: m, lane: l, chain: &msg}
			} else {
				lanes[l] = simPacket{to: m, lane: l, pairwise: body}
			}
			if want[m] == nil {
				want[m], allowed[m] = map[string]bool{}, map[string]bool{}
			}
			want[m][body], allowed[m][body] = true, true
		}
		if !roster["mallory/1"] { // the removed member reads the relay
			net = append(net, simPacket{to: "mallory/1", chain: &msg})
		}
	}

	rotate()
	for round := 0; round < 200; round++ {
		switch round {
		case 20: // mallory is removed: a new generation, a new chain
			delete(roster, "mallory/1")
			generation++
			for l := range lanes {
				if l.to == "mallory/1" {
					delete(lanes, l) // her lanes end as removed: she need not get them
					delete(want["mallory/1"], bodies[simLane{l.chain, l.pos, ""}])
				}
			}
			rotate()
		case 30: // bob's second device is entitled mid-chain, at the next position
			join("bob/2")
			entitle("bob/2", cur.AnnounceFromNext(wire.LogicalID{}))
		case 40: // frank is added: a new generation, a new chain from 0
			join("frank/1")
			generation++
			rotate()
		case 60: // the network heals; every pending lane must drain
			lossy = false
		}
		if round < 60 {
			sendMessage(fmt.Sprintf("m%d", round))
		}
		if round%3 == 0 || !lossy { // retries
			for _, p := range lanes {
				send(p)
			}
		}
		batch := net
		net = nil
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		for _, p := range batch {
			if p.to == sender {
				senderGets(p)
			} else {
				memberGets(p)
			}
		}
		if round >= 60 && len(lanes) == 0 && len(net) == 0 {
			break
		}
	}
	if len(lanes) != 0 {
		t.Fatalf("%d lanes still pending after the network healed", len(lanes))
	}
	for name, m := range members {
		for body, n := range m.opened {
			// A removal is not retroactive: what was sent while a device
			// was a member, it may still read once.
			if !allowed[name][body] {
				t.Errorf("%s read %s, which it was never entitled to", name, body)
			} else if n != 1 {
				t.Errorf("%s read %s %d times", name, body, n)
			}
		}
		for body := range want[name] {
			if m.opened[body] != 1 {
				t.Errorf("%s never read %s", name, body)
			}
		}
		if name != "mallory/1" && len(m.held) != 0 {
			t.Errorf("%s still holds %d chain messages", name, len(m.held))
		}
	}
	if len(want["bob/2"]) == 0 || want["bob/2"]["m29"] || len(want["frank/1"]) == 0 || want["frank/1"]["m39"] {
		t.Fatalf("the late devices were sent the wrong messages: %v, %v", want["bob/2"], want["frank/1"])
	}
	// mallory got a copy of every later message and could open none: she
	// holds what she was sent last, having asked in vain.
	if len(members["mallory/1"].held) != simMaxHeld {
		t.Fatalf("mallory holds %d chain messages, want the bound %d", len(members["mallory/1"].held), simMaxHeld)
	}
}
