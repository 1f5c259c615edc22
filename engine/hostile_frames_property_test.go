package engine_test

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestHostileFramesLeaveStaging drives one live client, bob, with random
// and hostile frames from a stranger (eve) and from a member of a group he
// is in (mallory): bytes of no layout, valid frames with bytes flipped,
// roster changes signed by the sender that say anything, group messages and
// refusals naming anything. After every batch one sync must succeed and
// leave in staging only rows held within their bounds, and a friend's
// message sent after the batch must arrive: no input stops the receive
// loop.
func TestHostileFramesLeaveStaging(t *testing.T) {
	w := newWorld(t)
	alice, bob, eve, mallory := w.device("alice/1"), w.device("bob/1"), w.device("eve/1"), w.device("mallory/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "crew", []engine.Address{bob.addr, mallory.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, mallory)
	pool := []string{"alice/1", "bob/1", "eve/1", "mallory/1", "x/1", "zz/9"}
	serial := 0
	rapid.Check(t, func(rt *rapid.T) {
		for range rapid.IntRange(1, 6).Draw(rt, "frames") {
			from := rapid.SampledFrom([]*device{eve, mallory}).Draw(rt, "from")
			frame := hostileFrame(rt, from, info.ID, pool)
			if err := from.c.SendRawFrame(w.ctx, bob.addr, frame); err != nil {
				rt.Fatalf("%s sends: %v", from.addr, err)
			}
		}
		if _, err := bob.c.Sync(w.ctx); err != nil {
			rt.Fatalf("bob's sync after hostile frames: %v", err)
		}
		if n, err := bob.c.StagedCount(w.ctx); err != nil || n > 2*engine.MaxHeldPerSender {
			rt.Fatalf("%d rows staged after one sync (%v), want only held ones, at most %d", n, err, 2*engine.MaxHeldPerSender)
		}
		serial++
		body := fmt.Sprintf("friend %d", serial)
		alice.send(bob, body)
		if _, err := bob.c.Sync(w.ctx); err != nil {
			rt.Fatalf("bob's sync of a friend's message: %v", err)
		}
		bob.commitAll()
		got := bob.received(alice)
		if len(got) == 0 || got[len(got)-1] != body {
			rt.Fatalf("bob's last message from alice is %v, want %q", got, body)
		}
	})
}

// hostileFrame draws one frame a hostile sender could send.
func hostileFrame(rt *rapid.T, from *device, group wire.GroupID, pool []string) []byte {
	gen := rapid.Uint64Range(0, 40).Draw(rt, "generation")
	var id wire.LogicalID
	copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(rt, "id"))
	g := group
	if rapid.Bool().Draw(rt, "other group") {
		g[0] ^= 0xff
	}
	var frame []byte
	switch rapid.IntRange(0, 5).Draw(rt, "kind") {
	case 0: // bytes of no layout, behind the frame version
		frame = append([]byte{wire.FrameVersion}, rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "bytes")...)
	case 1: // a roster change signed by its sender, saying anything
		var ops []wire.RosterChange
		var members []wire.RosterMember
		for i, a := range pool {
			if a == "zz/9" {
				continue
			}
			switch rapid.IntRange(0, 4).Draw(rt, fmt.Sprintf("op %d", i)) {
			case 1:
				ops = append(ops, wire.RosterChange{Op: wire.RosterAdd, Address: a})
			case 2:
				ops = append(ops, wire.RosterChange{Op: wire.RosterRemove, Address: a})
			case 3:
				ops = append(ops, wire.RosterChange{Op: wire.RosterAdmin, Address: a})
			}
			if rapid.Bool().Draw(rt, fmt.Sprintf("member %d", i)) {
				members = append(members, wire.RosterMember{Address: a, Admin: rapid.Bool().Draw(rt, fmt.Sprintf("admin %d", i))})
			}
		}
		if gen == 0 {
			gen = 1
		}
		b, err := from.c.SignRosterChange(g, engine.RosterChange{ID: id, Generation: gen, Name: "n", Ops: ops, Members: members})
		if err != nil {
			rt.Fatal(err)
		}
		frame = b
		if rapid.Bool().Draw(rt, "non-canonical member") {
			// A member no address parser takes, signed as it stands.
			body := bytes.Replace(frame[:len(frame)-64], []byte("x/1"), []byte("X/1"), 1)
			frame = from.c.SignFrameBody(body)
		}
	case 2: // a group message naming any group and generation
		frame, _ = wire.EncodeGroupMessage(wire.GroupMessage{ID: id, Group: g, Generation: gen, Content: wire.ContentText, Body: []byte("hostile")})
	case 3: // a refusal of any message
		frame, _ = wire.EncodeNotAMember(wire.NotAMember{ID: id, Group: g, Generation: gen})
	case 4: // an acknowledgement of anything
		frame, _ = wire.EncodeFrame(wire.Frame{Kind: wire.FrameAck, ID: id})
	default: // an unsigned roster, the old layout
		frame, _ = wire.EncodeRoster(wire.Roster{ID: id, Group: g, Generation: gen + 1, Name: "n"})
	}
	if len(frame) > 2 && rapid.IntRange(0, 4).Draw(rt, "flip") == 0 {
		i := rapid.IntRange(2, len(frame)-1).Draw(rt, "flip at")
		frame = bytes.Clone(frame)
		frame[i] ^= byte(rapid.IntRange(1, 255).Draw(rt, "flip bits"))
	}
	return frame
}
