package session

import (
	"errors"
	"fmt"
	"testing"
)

func TestDecidePreKeyMessage(t *testing.T) {
	small, large := InitiationID{0x01}, InitiationID{0xf0}
	pinned := IdentityKey{SigningKey: [32]byte{1}}
	other := IdentityKey{SigningKey: [32]byte{2}}
	retired := func(ids ...InitiationID) func(InitiationID) bool {
		return func(id InitiationID) bool {
			for _, r := range ids {
				if r == id {
					return true
				}
			}
			return false
		}
	}
	tests := []struct {
		name string
		in   PreKeyDecisionInput
		want Decision
	}{
		{"1 identity differs beats everything", PreKeyDecisionInput{Pinned: &pinned, Identity: other, ID: small, Current: &CurrentSession{ID: small}, Retired: retired(small)}, DecideIdentityChanged},
		{"2 current initiation decrypts", PreKeyDecisionInput{Pinned: &pinned, Identity: pinned, ID: small, Current: &CurrentSession{ID: small, AwaitingReply: true}}, DecideDecryptCurrent},
		{"2 current beats retired", PreKeyDecisionInput{Identity: pinned, ID: small, Current: &CurrentSession{ID: small}, Retired: retired(small)}, DecideDecryptCurrent},
		{"3 retired is stale", PreKeyDecisionInput{Pinned: &pinned, Identity: pinned, ID: large, Current: &CurrentSession{ID: small}, Retired: retired(large)}, DecideStale},
		{"3 retired is stale without a session", PreKeyDecisionInput{Identity: pinned, ID: large, Retired: retired(large)}, DecideStale},
		{"4 no session, no pin", PreKeyDecisionInput{Identity: pinned, ID: large}, DecideAccept},
		{"4 no session, pinned", PreKeyDecisionInput{Pinned: &pinned, Identity: pinned, ID: large}, DecideAccept},
		{"5 names the established session: replace", PreKeyDecisionInput{Identity: pinned, ID: large, Replaces: small, Current: &CurrentSession{ID: small}}, DecideReplaceNamed},
		{"5 names the own awaiting session: replace, whatever the order", PreKeyDecisionInput{Identity: pinned, ID: large, Replaces: small, Current: &CurrentSession{ID: small, AwaitingReply: true}}, DecideReplaceNamed},
		{"5 retired beats a name", PreKeyDecisionInput{Identity: pinned, ID: large, Replaces: small, Current: &CurrentSession{ID: small}, Retired: retired(large)}, DecideStale},
		{"6 established, names nothing: superseded", PreKeyDecisionInput{Identity: pinned, ID: small, Current: &CurrentSession{ID: large}}, DecideSuperseded},
		{"6 established, names another: superseded", PreKeyDecisionInput{Identity: pinned, ID: small, Replaces: InitiationID{0x77}, Current: &CurrentSession{ID: large}}, DecideSuperseded},
		{"7 own smaller and awaiting: own wins", PreKeyDecisionInput{Identity: pinned, ID: large, Current: &CurrentSession{ID: small, AwaitingReply: true}}, DecideCollision},
		{"7 names another, own smaller: own wins", PreKeyDecisionInput{Identity: pinned, ID: large, Replaces: InitiationID{0x77}, Current: &CurrentSession{ID: small, AwaitingReply: true}}, DecideCollision},
		{"8 own larger and awaiting: incoming wins", PreKeyDecisionInput{Identity: pinned, ID: small, Current: &CurrentSession{ID: large, AwaitingReply: true}}, DecideAcceptReplace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecidePreKeyMessage(tt.in); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDecideRatchet walks the rules for a ratchet message in their order
// (docs/protocol.md, "When one is sent"): each row names the rule that
// decides it, and the rows after the first of a rule show that it beats
// the later ones.
func TestDecideRatchet(t *testing.T) {
	current, skipped, fresh := [32]byte{0x01}, [32]byte{0x02}, [32]byte{0x03}
	skips := func(keys ...[32]byte) func([32]byte) bool {
		return func(k [32]byte) bool {
			for _, s := range keys {
				if s == k {
					return true
				}
			}
			return false
		}
	}
	past := [32]byte{0x04}
	pastOf := func(key [32]byte, count uint32) func([32]byte) (uint32, bool) {
		return func(k [32]byte) (uint32, bool) { return count, k == key }
	}
	decryptErr := fmt.Errorf("wrapped: %w", ErrDecrypt)
	tooFar := fmt.Errorf("%w: 1001 keys", ErrTooManySkipped)
	noRandom := errors.New("random source failed")
	tests := []struct {
		name string
		in   RatchetDecisionInput
		want RatchetDecision
	}{
		{"1 no session asks for recovery", RatchetDecisionInput{Key: fresh}, DecideNoSession},
		{"1 no session beats a known key", RatchetDecisionInput{Key: current, Receiving: &current, Skipped: skips(current), Err: decryptErr}, DecideNoSession},
		{"2 opened on the receiving chain", RatchetDecisionInput{Session: true, Key: current, Receiving: &current}, DecideOpened},
		{"2 opened on a skipped chain", RatchetDecisionInput{Session: true, Key: skipped, Receiving: &current, Skipped: skips(skipped)}, DecideOpened},
		{"2 opened on a new chain", RatchetDecisionInput{Session: true, Key: fresh, Receiving: &current, Skipped: skips(skipped)}, DecideOpened},
		{"3 bad MAC on the receiving chain is a forgery", RatchetDecisionInput{Session: true, Key: current, Receiving: &current, Err: decryptErr}, DecideForgery},
		{"3 too far a skip on the receiving chain is a forgery", RatchetDecisionInput{Session: true, Key: current, Receiving: &current, Err: tooFar}, DecideForgery},
		{"3 a duplicate on the receiving chain is a copy", RatchetDecisionInput{Session: true, Key: current, Receiving: &current, Err: ErrDuplicateMessage}, DecideForgery},
		{"4 bad MAC on a skipped chain is a forgery", RatchetDecisionInput{Session: true, Key: skipped, Receiving: &current, Skipped: skips(skipped), Err: decryptErr}, DecideForgery},
		{"4 too far a skip on a skipped chain is a forgery", RatchetDecisionInput{Session: true, Key: skipped, Receiving: &current, Skipped: skips(skipped), Err: tooFar}, DecideForgery},
		{"4 a skipped chain comes before a past one", RatchetDecisionInput{Session: true, Key: skipped, Receiving: &current, Skipped: skips(skipped), Past: pastOf(skipped, 9), Err: decryptErr}, DecideForgery},
		{"5 a copy below a past chain's count is a duplicate", RatchetDecisionInput{Session: true, Key: past, N: 1, Receiving: &current, Past: pastOf(past, 2), Err: decryptErr}, DecideDuplicate},
		{"5 a past chain's first message again is a duplicate", RatchetDecisionInput{Session: true, Key: past, N: 0, Receiving: &current, Past: pastOf(past, 1), Err: tooFar}, DecideDuplicate},
		{"5 at a past chain's count is a forgery", RatchetDecisionInput{Session: true, Key: past, N: 2, Receiving: &current, Past: pastOf(past, 2), Err: decryptErr}, DecideForgery},
		{"5 the largest number on a full past chain is a forgery", RatchetDecisionInput{Session: true, Key: past, N: ^uint32(0), Receiving: &current, Past: pastOf(past, ^uint32(0)), Err: decryptErr}, DecideForgery},
		{"5 the receiving chain comes before a past one", RatchetDecisionInput{Session: true, Key: current, Receiving: &current, Past: pastOf(current, 5), Err: ErrDuplicateMessage}, DecideForgery},
		{"6 a key no past chain holds is a new chain", RatchetDecisionInput{Session: true, Key: fresh, Receiving: &current, Past: pastOf(past, 2), Err: decryptErr}, DecideDiverged},
		{"6 bad MAC on a new chain asks for recovery", RatchetDecisionInput{Session: true, Key: fresh, Receiving: &current, Skipped: skips(skipped), Err: decryptErr}, DecideDiverged},
		{"6 too far a skip on a new chain asks for recovery", RatchetDecisionInput{Session: true, Key: fresh, Receiving: &current, Err: tooFar}, DecideDiverged},
		{"6 nothing received yet: every key is new", RatchetDecisionInput{Session: true, Key: fresh, Err: decryptErr}, DecideDiverged},
		{"7 no next own key on a new chain is refused", RatchetDecisionInput{Session: true, Key: fresh, Receiving: &current, Err: noRandom}, DecideRefused},
		{"7 any other failure on a new chain is refused", RatchetDecisionInput{Session: true, Key: fresh, Err: ErrBadSignature}, DecideRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideRatchet(tt.in); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDecideRatchetOnSessions feeds DecideRatchet what real sessions say
// (their receiving chain, their skipped keys, what decrypting on a copy
// returned), as prepareRatchet does: a failure on bob's receiving chain or
// on a chain he kept skipped keys of is a forgery, one on a chain he cannot
// place asks for recovery.
func TestDecideRatchetOnSessions(t *testing.T) {
	a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
	as, bs := pair(t, SystemRandom{}, a, b, false)
	_, m := send(t, as, "a1")
	recv(t, bs, m, "a1")
	_, m = send(t, bs, "b1")
	recv(t, as, m, "b1")
	// Alice's second chain: bob opens its third message first and keeps
	// the keys of the first two.
	_, x1 := send(t, as, "x1")
	_, x2 := send(t, as, "x2")
	_, x3 := send(t, as, "x3")
	recv(t, bs, x3, "x3")
	// Her third chain becomes bob's receiving chain.
	_, m = send(t, bs, "b2")
	recv(t, as, m, "b2")
	_, y1 := send(t, as, "y1")
	_, y2 := send(t, as, "y2")
	recv(t, bs, y1, "y1")
	// A session alice set up again from scratch: its chain is one bob
	// cannot place.
	other, _ := pair(t, SystemRandom{}, a, b, false)
	_, z := send(t, other, "z")

	tamper := func(m sealed) sealed {
		m.m.Ciphertext = append([]byte(nil), m.m.Ciphertext...)
		m.m.Ciphertext[0] ^= 1
		return m
	}
	decide := func(m sealed) RatchetDecision {
		in := RatchetDecisionInput{Session: true, Receiving: bs.ReceivingKey(), Skipped: bs.HasSkipped, Key: m.m.Header.RatchetKey}
		_, in.Err = m.open(bs.Clone())
		return DecideRatchet(in)
	}
	tests := []struct {
		name string
		m    sealed
		want RatchetDecision
	}{
		{"the next message of the receiving chain opens", y2, DecideOpened},
		{"a skipped message opens", x2, DecideOpened},
		{"a forgery on the receiving chain", tamper(y2), DecideForgery},
		{"a copy on the receiving chain", y1, DecideForgery},
		{"a forgery on a chain with skipped keys", tamper(x1), DecideForgery},
		{"a used position of a chain with skipped keys", x3, DecideForgery},
		{"a chain bob cannot place", z, DecideDiverged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.m); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Both winners of a simultaneous start, with real sessions: the side whose
// initiation has the smaller ID wins on both devices.
func TestCollisionBothWinners(t *testing.T) {
	for i := 0; i < 8; i++ {
		a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
		aOwn, err := Initiate(SystemRandom{}, a.addr, a.id, b.bundle(false), testNow)
		if err != nil {
			t.Fatal(err)
		}
		bOwn, err := Initiate(SystemRandom{}, b.addr, b.id, a.bundle(false), testNow)
		if err != nil {
			t.Fatal(err)
		}
		// What each side decides about the other's initiation.
		atBob := DecidePreKeyMessage(PreKeyDecisionInput{Identity: a.id.Public(), ID: IncomingInitiationID(b.addr, b.id, a.addr, aOwn.Initiation), Current: &CurrentSession{ID: bOwn.ID, AwaitingReply: true}})
		atAlice := DecidePreKeyMessage(PreKeyDecisionInput{Identity: b.id.Public(), ID: IncomingInitiationID(a.addr, a.id, b.addr, bOwn.Initiation), Current: &CurrentSession{ID: aOwn.ID, AwaitingReply: true}})
		aliceWins := aOwn.ID.Compare(bOwn.ID) < 0
		if aliceWins && (atBob != DecideAcceptReplace || atAlice != DecideCollision) ||
			!aliceWins && (atBob != DecideCollision || atAlice != DecideAcceptReplace) {
			t.Fatalf("alice wins=%v: bob decides %v, alice decides %v", aliceWins, atBob, atAlice)
		}
	}
}
