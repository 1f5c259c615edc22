package engine

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
)

var decisionNames = [...]string{
	DecideIdentityChanged: "identity changed",
	DecideDecryptCurrent:  "decrypt on current session",
	DecideStale:           "stale initiation",
	DecideAccept:          "accept",
	DecideCollision:       "collision, own initiation wins",
	DecideAcceptReplace:   "accept and replace",
}

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
}

// DecidePreKeyMessage applies the rules for an incoming PreKeyMessage in
// order. It is pure: the caller performs what the decision says in one receive
// transaction.
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
	case in.Current.AwaitingReply && in.ID.Compare(in.Current.ID) > 0:
		return DecideCollision
	default:
		return DecideAcceptReplace
	}
}
