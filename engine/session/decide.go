package session

import "errors"

// Decision is what to do with an incoming PreKeyMessage.
type Decision uint8

// The outcomes of DecidePreKeyMessage, one per rule of the session-set-up
// order.
const (
	// DecideIdentityChanged: the initiator's identity differs from the pinned one.
	DecideIdentityChanged Decision = iota + 1
	// DecideDecryptCurrent: the message belongs to the current session's initiation.
	DecideDecryptCurrent
	// DecideStale: the initiation was retired; no cryptographic work.
	DecideStale
	// DecideAccept: there is no session; accept the initiation.
	DecideAccept
	// DecideCollision: the own initiation, still awaiting its first reply, has
	// the smaller ID and wins. Authenticate the incoming message, drop its
	// plaintext unread, retire its initiation, fail with ErrSessionCollision.
	DecideCollision
	// DecideAcceptReplace: accept the initiation, replace the current session
	// and retire the replaced one's initiation.
	DecideAcceptReplace
	// DecideReplaceNamed: the initiation names the current session as the
	// one it replaces (the peer reset it after a recovery request): accept
	// it and retire the current one, whatever the IDs' order.
	DecideReplaceNamed
	// DecideSuperseded: the current session has carried a message from the
	// peer, and the initiation does not name it. The peer made this
	// initiation before it had the current session, so it abandoned it (a
	// relay delivered it late), or it lost its state; either way the
	// established session stays, no cryptographic work. A recovery request
	// tells a peer that lost its state which session to replace.
	DecideSuperseded
)

var decisionNames = [...]string{
	DecideIdentityChanged: "identity changed",
	DecideDecryptCurrent:  "decrypt on current session",
	DecideStale:           "stale initiation",
	DecideAccept:          "accept",
	DecideCollision:       "collision, own initiation wins",
	DecideAcceptReplace:   "accept and replace",
	DecideReplaceNamed:    "accept the named replacement",
	DecideSuperseded:      "superseded by the established session",
}

// String names the decision.
func (d Decision) String() string {
	if int(d) < len(decisionNames) && decisionNames[d] != "" {
		return decisionNames[d]
	}
	return "unknown decision"
}

// CurrentSession is what the decision needs to know of the current session.
type CurrentSession struct {
	ID            InitiationID
	AwaitingReply bool // own initiation, nothing received on it yet
}

// PreKeyDecisionInput is everything DecidePreKeyMessage looks at.
type PreKeyDecisionInput struct {
	Pinned   *IdentityKey    // pinned identity of the sender; nil if none
	Current  *CurrentSession // current session with the sender; nil if none
	Retired  func(InitiationID) bool
	Identity IdentityKey  // identity the incoming initiation carries
	ID       InitiationID // incoming initiation's ID
	Replaces InitiationID // the initiation it names as replaced; zero for none
}

// DecidePreKeyMessage applies the rules for an incoming PreKeyMessage in
// order. It is pure: the caller performs what the decision says in one receive
// transaction.
//
//  1. the identity differs from the pinned one: identity changed;
//  2. it is the current session's initiation: decrypt on it;
//  3. its initiation was retired: stale;
//  4. there is no session: accept;
//  5. it names the current session as the one it replaces: accept, replace;
//  6. the current session has carried a message from the peer (it does not
//     await its first reply): superseded, the session stays;
//  7. the own session awaits its first reply and the incoming ID is greater:
//     collision, the own initiation wins;
//  8. otherwise: accept and replace (the own initiation lost).
func DecidePreKeyMessage(in PreKeyDecisionInput) Decision {
	switch {
	case in.Pinned != nil && !in.Pinned.Equal(in.Identity):
		return DecideIdentityChanged
	case in.Current != nil && in.Current.ID == in.ID:
		return DecideDecryptCurrent
	case in.Retired != nil && in.Retired(in.ID):
		return DecideStale
	case in.Current == nil:
		return DecideAccept
	case in.Replaces != (InitiationID{}) && in.Replaces == in.Current.ID:
		return DecideReplaceNamed
	case !in.Current.AwaitingReply:
		return DecideSuperseded
	case in.ID.Compare(in.Current.ID) > 0:
		return DecideCollision
	default:
		return DecideAcceptReplace
	}
}

// RatchetDecision is what an incoming ratchet message's outcome means.
type RatchetDecision uint8

// The outcomes of DecideRatchet, one per rule of the ratchet-message order.
const (
	// DecideNoSession: there is no session with the sender. Drop the message
	// and ask the sender for recovery (ErrNoSession); no cryptographic work.
	DecideNoSession RatchetDecision = iota + 1
	// DecideOpened: the session opened the message; its frame decides the
	// rest.
	DecideOpened
	// DecideForgery: it failed on a chain the session knows (its receiving
	// chain, or one it kept skipped keys of). The keys there are certain, so
	// the message is a forgery or a copy: drop it, never a reason to start
	// again.
	DecideForgery
	// DecideDiverged: the keys of a chain the session cannot place do not
	// open it (a bad MAC, or too far a skip): the two sides went apart. Drop
	// it and ask the sender for recovery.
	DecideDiverged
	// DecideRefused: any other failure on a chain the session cannot place:
	// drop it.
	DecideRefused
	// DecideDuplicate: it is on a receiving chain the session left, at a
	// position the session already passed: a copy of a message already
	// opened (a relay's redelivery after a lost lease acknowledgement),
	// dropped as ErrDuplicateMessage, never a reason to ask for recovery.
	DecideDuplicate
)

var ratchetDecisionNames = [...]string{
	DecideNoSession: "no session, ask for recovery",
	DecideOpened:    "opened",
	DecideForgery:   "failed on a known chain: forgery",
	DecideDiverged:  "failed on a new chain, ask for recovery",
	DecideRefused:   "refused",
	DecideDuplicate: "a copy from a past chain: duplicate",
}

// String names the decision.
func (d RatchetDecision) String() string {
	if int(d) < len(ratchetDecisionNames) && ratchetDecisionNames[d] != "" {
		return ratchetDecisionNames[d]
	}
	return "unknown ratchet decision"
}

// RatchetDecisionInput is everything DecideRatchet looks at.
type RatchetDecisionInput struct {
	Session   bool                // a session with the sender exists
	Receiving *[32]byte           // the peer's ratchet key of the session's receiving chain; nil if none yet
	Skipped   func([32]byte) bool // whether the session kept skipped keys of the chain of a ratchet key
	Key       [32]byte            // the ratchet key in the message's header
	N         uint32              // the message number in the message's header
	// Past returns how many messages the session's past receiving chain of
	// a ratchet key held; ok is false for a key it does not remember.
	Past func([32]byte) (count uint32, ok bool)
	Err  error // what decrypting the message on a copy of the session returned
}

// pastHeld reports whether the message's key is that of a past receiving
// chain that held at least n messages.
func (in RatchetDecisionInput) pastHeld(n uint64) bool {
	if in.Past == nil {
		return false
	}
	count, ok := in.Past(in.Key)
	return ok && uint64(count) >= n
}

// DecideRatchet applies the rules for an incoming ratchet message in order.
// It is pure. Unlike a PreKeyMessage, a ratchet message is opened the same
// way whatever its chain (Session.Decrypt on a copy of the session, which
// changes nothing when it fails), so the rules judge the outcome: which
// chain the message is on says what a failure means.
//
//  1. there is no session: ask for recovery, without decrypting;
//  2. the session opened it: the frame decides;
//  3. its ratchet key is that of the receiving chain: the failure is a
//     forgery or a copy;
//  4. the session kept skipped keys of its chain: likewise a forgery or a
//     copy;
//  5. its ratchet key is that of a receiving chain the session left: below
//     the number of messages that chain held, a copy of a message already
//     opened (a duplicate); at or beyond it, a forgery. Neither asks for
//     recovery;
//  6. otherwise it is a new chain (the key is none of the above). Keys
//     that do not open it (ErrDecrypt) or a skip beyond the bound
//     (ErrTooManySkipped) say the sides went apart: ask for recovery;
//  7. any other failure: refused.
func DecideRatchet(in RatchetDecisionInput) RatchetDecision {
	switch {
	case !in.Session:
		return DecideNoSession
	case in.Err == nil:
		return DecideOpened
	case in.Receiving != nil && *in.Receiving == in.Key:
		return DecideForgery
	case in.Skipped != nil && in.Skipped(in.Key):
		return DecideForgery
	case in.pastHeld(uint64(in.N) + 1):
		return DecideDuplicate
	case in.pastHeld(0):
		return DecideForgery
	case errors.Is(in.Err, ErrDecrypt) || errors.Is(in.Err, ErrTooManySkipped):
		return DecideDiverged
	default:
		return DecideRefused
	}
}
