package engine

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
		{"5 bad MAC on a new chain asks for recovery", RatchetDecisionInput{Session: true, Key: fresh, Receiving: &current, Skipped: skips(skipped), Err: decryptErr}, DecideDiverged},
		{"5 too far a skip on a new chain asks for recovery", RatchetDecisionInput{Session: true, Key: fresh, Receiving: &current, Err: tooFar}, DecideDiverged},
		{"5 nothing received yet: every key is new", RatchetDecisionInput{Session: true, Key: fresh, Err: decryptErr}, DecideDiverged},
		{"6 no next own key on a new chain is refused", RatchetDecisionInput{Session: true, Key: fresh, Receiving: &current, Err: noRandom}, DecideRefused},
		{"6 any other failure on a new chain is refused", RatchetDecisionInput{Session: true, Key: fresh, Err: ErrBadSignature}, DecideRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideRatchet(tt.in); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
