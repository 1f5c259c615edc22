package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/engine/session"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Failpoint is called at every named point of a transition; a non-nil error
// makes the transition fail there. Tests use it to inject errors and hard
// process exits. Names are "<plan kind>/<point>".
type Failpoint func(point string) error

// Config configures a Client.
type Config struct {
	Store  Store
	Relay  Relay
	Random Randomness       // default SystemRandom
	Now    func() time.Time // default time.Now
	// Failpoint, when set, is consulted at every named point.
	Failpoint Failpoint
	// EventBuffer is the capacity of the events channel (default 1024).
	EventBuffer int
	// BatchSize bounds the plans applied in one transaction (default 64).
	BatchSize int
	// Policy is what the receive loop does on its own (see Policy); it can
	// be changed later with SetPolicy.
	Policy Policy
	// PollInterval is how often Run looks at a relay that does not signal
	// (DefaultPollInterval).
	PollInterval time.Duration
	// MaintainEvery is how often a round checks whether prekey maintenance
	// is due, besides after every new relay connection
	// (DefaultMaintainEvery).
	MaintainEvery time.Duration
	// CapStrangers holds peers this device has not accepted (Store.Accepted)
	// to the tighter caps on pending messages (MaxPendingPerStranger,
	// MaxPendingStrangers). Unset, every peer is held to
	// MaxPendingPerPeer alone.
	CapStrangers bool
	// Files configures file transfers (file.go).
	Files FileConfig
	// Requests stages the first messages from peers this device has not
	// accepted as message requests (request.go): nothing goes back to
	// them until the owner accepts. Unset, every peer is accepted.
	Requests bool
	// PairwiseGroups sends every group message pairwise, never by a
	// sender chain (chainsend.go). Unset, a group of ChainMinMembers or
	// more uses its chain for the members that hold it.
	PairwiseGroups bool
	// PerMessageChainAcks acknowledges every chain message with an ACK of
	// its own (frame kind 2), as builds before the cumulative ACK did,
	// instead of one cumulative ACK per sender device and group for each
	// receive page (chainack.go). For tests and benchmarks.
	PerMessageChainAcks bool
}

// peerState is the live, committed state of one peer.
type peerState struct {
	pinned   *IdentityKey
	session  *session.Session
	version  uint64
	replaces InitiationID       // see PeerState.Replaces
	past     session.PastChains // the session's past receiving chains (see PeerState.PastChains)
	refused  []uint32           // see PeerState.RefusedOneTime
}

// Client is one device's engine: the reliability layer over sessions, applied
// to a Store in commit plans. Live state changes only after a commit, and
// events are emitted from what the commit returned.
type Client struct {
	cfg   Config
	self  Address
	id    *Identity
	relay Relay
	store Store

	// The seven mutexes are taken in one order (lockorder.go): syncMu,
	// pumpMu, sendMu, loopMu, mu, recoveryMu, eventMu.

	// pumpMu makes the outbox pump (outbox.go) run one at a time, so that
	// each peer's unsent messages leave in the order they were stored. It
	// is never held by receive processing.
	pumpMu rankedMutex

	// sendMu orders every envelope the client produces (sends, retries and
	// ACKs) and serialises receive processing, which may produce ACKs.
	sendMu rankedMutex

	mu       rankedMutex
	peers    map[Address]*peerState
	spks     map[uint32]*session.SignedPreKey
	kems     map[uint32]*session.KEMPreKey
	nextPKID uint32
	closed   bool
	// prefetched are bundles CheckPeer fetched for the pump (outbox.go).
	prefetched map[Address]*fetchedBundle
	// chainQueue holds committed chain messages not yet handed off
	// (chainsend.go), under mu.
	chainQueue []*chainBatch
	// chainLanes counts the lanes this client sealed by a chain (tests).
	chainLanes atomic.Int64

	// The receive loop (loop.go, policy.go). syncMu makes rounds one at a time;
	// loopMu guards the policy and the schedules.
	syncMu           rankedMutex
	loopMu           rankedMutex
	policy           Policy
	commitPending    bool // commit everything pending at the next round
	retries          map[Address]*retryState
	envelopes        map[wire.EnvelopeID]sentEnvelope // message envelopes handed off, by ID (envelopefate.go)
	taken            []takenEnvelope                  // taken envelopes not recorded yet, oldest first (envelopefate.go)
	retryEpoch       uint64                           // relay link epoch the retry schedule last saw
	maintainedEpoch  uint64                           // relay link epoch of the last maintenance check
	listEpoch        uint64                           // relay link epoch the device list was last published on
	listErr          error                            // the last publishing's error
	peerListEpoch    uint64                           // relay link epoch the peers' device lists were last checked on
	listChecked      map[string]bool                  // people whose device list was checked on listCheckedEpoch (maxListChecks)
	listCheckedEpoch uint64
	// firstLists are the first device lists fetched before this batch's
	// receive for people none is held for (checkListsBeforeAcks): held
	// nowhere, read only by the deduplication by person, replaced at
	// the next batch. firstFetched are the people fetched so on
	// firstEpoch (maxListChecks).
	firstLists   map[string]wire.DeviceList
	firstFetched map[string]bool
	firstEpoch   uint64
	// unlistedChecked are the devices, unnamed by the list held for
	// their person, whose envelope made this device ask for a later list
	// on firstEpoch (checkListsBeforeAcks, maxListChecks).
	unlistedChecked map[Address]bool
	// ownListAsked are the device numbers of this account whose refused
	// sent copy or decision made the round ask the relay for the
	// account's list on ownListEpoch (learnOwnList), at most
	// maxListChecks.
	ownListAsked map[uint32]bool
	ownListEpoch uint64
	// ownUnlisted are the device numbers of this account whose group
	// frame a receive held because the account's list held here does not
	// name them (judgeGroupFrame): the round asks as for a refused copy
	// (learnOwnList). Under loopMu, at most maxListChecks.
	ownUnlisted map[uint32]bool
	// groupListsWanted are the people with no list held here whose group
	// frame a receive held (VouchAsking) or to whose devices a group send
	// went by the roster's entries alone: the round fetches their lists
	// (learnGroupLists). Under loopMu, at most maxListChecks.
	groupListsWanted map[string]bool
	// ownListDue is set when a lane to another device of this person was
	// retried: the next round publishes the list held (learnOwnList).
	ownListDue atomic.Bool
	// sentLists are the people messages were stored to since the last
	// round, whose list the round checks with the relay (checkSentLists).
	sentLists map[string]bool
	// unlistedFetched are the people with no list held here that a
	// round's check fetched a list of (checkSentList) on
	// unlistedEpoch, with when: one is fetched again on that connection
	// only noListRefetch later (maxListChecks people).
	unlistedFetched map[string]time.Time
	unlistedEpoch   uint64
	// decisionsDue is set when a decision was heard; decisionsKept while
	// some are kept; decisionsChecked once the kept ones were read
	// (decision.go).
	decisionsDue, decisionsKept, decisionsChecked atomic.Bool
	// refusedDecisions are the kept decisions whose plan the store
	// refused (ErrKeptDecisionRefused) in this process: reported once and
	// left out of later passes, forgotten once no longer due
	// (applyKeptDecisions; read and written under syncMu).
	refusedDecisions map[inboundKey]bool
	nextMaintain     time.Time
	nextPoolTopUp    time.Time
	kick             chan struct{} // SyncNow
	pumpKick         chan struct{} // wakes the pump's goroutine (outbox.go)
	pumpWanted       bool          // stored messages wait for the pump (outbox.go)
	pumpEpoch        uint64        // relay link epoch the pump last ran on
	pumpLoops        int           // pump goroutines running (Run's), outbox.go
	lanesStored      bool          // receive processing stored group lanes for the pump
	lifetime         context.Context
	endLifetime      context.CancelFunc // Close: ends every Run
	loops            sync.WaitGroup     // running Run calls

	// Recovery requests sent lately (recovery.go), and since when the
	// sending window of a peer has been full (window.go).
	recoveryMu rankedMutex
	recovery   recoveryLimits
	windowFull map[Address]time.Time
	// Need-chain requests sent and answered lately (chainneed.go), also
	// under recoveryMu.
	needAsked, needAnswered needMarks

	transfers transferSlots // file transfers at once (file.go)

	events    chan Event
	eventMu   rankedMutex
	lost      bool   // an event was dropped: the next one is a resync
	marker    uint64 // presentation marker of the last visible commit
	emitted   uint64 // marker as of the last event put on the channel
	presented uint64
}

// Open loads a profile's state from the store. When the previous process
// stopped between a commit and the presentation of its events, the first
// event is a StateResync (and ResyncRequired reports true).
func Open(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Random == nil {
		cfg.Random = SystemRandom{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = 1024
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.MaintainEvery <= 0 {
		cfg.MaintainEvery = DefaultMaintainEvery
	}
	prof, err := cfg.Store.Profile(ctx)
	if err != nil {
		return nil, fmt.Errorf("open profile: %w", err)
	}
	id, err := session.UnmarshalIdentity(prof.Identity)
	if err != nil {
		return nil, fmt.Errorf("open profile: %w", err)
	}
	c := &Client{
		cfg: cfg, self: prof.Self, id: id, relay: cfg.Relay, store: cfg.Store,
		peers: make(map[Address]*peerState), spks: make(map[uint32]*session.SignedPreKey), kems: make(map[uint32]*session.KEMPreKey),
		nextPKID: prof.NextPreKeyID, events: make(chan Event, cfg.EventBuffer),
		marker: prof.MarkerWritten, presented: prof.MarkerPresented,
		policy: cfg.Policy.withDefaults(), retries: make(map[Address]*retryState), envelopes: make(map[wire.EnvelopeID]sentEnvelope), kick: make(chan struct{}, 1), pumpKick: make(chan struct{}, 1),
	}
	c.rankLocks()
	c.lifetime, c.endLifetime = context.WithCancel(context.Background())
	for _, r := range prof.SignedPreKeys {
		switch r.Kind {
		case PreKeySigned:
			k, err := session.UnmarshalSignedPreKey(r.Record)
			if err != nil {
				return nil, fmt.Errorf("open profile: %w", err)
			}
			c.spks[k.ID] = k
		case PreKeyKEM:
			k, err := session.UnmarshalKEMPreKey(r.Record)
			if err != nil {
				return nil, fmt.Errorf("open profile: %w", err)
			}
			c.kems[k.ID] = k
		}
	}
	if c.marker > c.presented {
		c.emit(Event{Kind: EventResync, At: cfg.Now(), Err: ErrStateResyncRequired})
	}
	return c, nil
}

// CreateProfile makes a new identity and first prekeys for self and stores them
// through a freshly created store. It returns the identity's public key.
func CreateProfile(ctx context.Context, st Store, self Address, relayURL string, r Randomness, now time.Time) (IdentityKey, error) {
	if r == nil {
		r = SystemRandom{}
	}
	id, err := NewIdentity(r)
	if err != nil {
		return IdentityKey{}, err
	}
	recs, err := freshPreKeys(r, id, 1, now, true)
	if err != nil {
		return IdentityKey{}, err
	}
	idRec, _ := id.MarshalBinary()
	p := Bootstrap{Self: self, RelayURL: relayURL, Identity: idRec, PreKeys: recs}
	// The account key comes from the system's randomness, not r: a
	// deterministic r (the demo's, tests') then gives the identity, the
	// prekeys and every later draw exactly as before accounts existed, and
	// the account key, shown nowhere yet, stays independent of them.
	acc, err := newAccount(SystemRandom{}, id, self, now)
	if err != nil {
		return IdentityKey{}, err
	}
	if _, err := st.ApplyBatch(ctx, []Plan{p, acc}); err != nil {
		return IdentityKey{}, fmt.Errorf("bootstrap %s: %w", self, err)
	}
	return id.Public(), nil
}

// freshPreKeys makes a signed X25519 prekey and an ML-KEM prekey (IDs first
// and first+1) and, when oneTime is set, a batch of one-time prekeys after
// them.
func freshPreKeys(r Randomness, id *Identity, first uint32, now time.Time, oneTime bool) ([]PreKeyRecord, error) {
	spk, err := session.NewSignedPreKey(r, id, first, now)
	if err != nil {
		return nil, err
	}
	kem, err := session.NewKEMPreKey(r, id, first+1, now)
	if err != nil {
		return nil, err
	}
	sr, _ := spk.MarshalBinary()
	kr, _ := kem.MarshalBinary()
	recs := []PreKeyRecord{
		{Kind: PreKeySigned, ID: spk.ID, Created: spk.Created, Expires: spk.Expires, Record: sr},
		{Kind: PreKeyKEM, ID: kem.ID, Created: kem.Created, Expires: kem.Expires, Record: kr},
	}
	if oneTime {
		for i := uint32(0); i < OneTimePreKeyBatch; i++ {
			k, err := session.NewOneTimePreKey(r, first+2+i)
			if err != nil {
				return nil, err
			}
			rec, _ := k.MarshalBinary()
			recs = append(recs, PreKeyRecord{Kind: PreKeyOneTime, ID: k.ID, Record: rec})
		}
	}
	return recs, nil
}

// Self returns the device's own address.
func (c *Client) Self() Address { return c.self }

// Identity returns the device's own identity key.
func (c *Client) Identity() IdentityKey { return c.id.Public() }

// Events returns the channel on which the client reports what committed.
func (c *Client) Events() <-chan Event { return c.events }

// ResyncRequired reports whether the previous process stopped between a
// commit and the presentation of its events.
func (c *Client) ResyncRequired() bool {
	c.eventMu.Lock()
	defer c.eventMu.Unlock()
	return c.marker > c.presented
}

// Close ends every Run and waits for it, then releases the store. It does
// not mark events presented: a caller that drew every event calls
// MarkPresented first, so that a close after an undrawn event still asks for
// a resync at the next open.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.endLifetime()
	c.loops.Wait()
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.store.Close()
}

// MarkPresented records durably that the presentation has caught up with
// every event emitted so far, so that the next open needs no resync. A UI
// calls it after it drew what the events said (it is cheap to call often:
// it writes only when something new was presented). It marks nothing while
// events wait in the channel, were dropped, or a commit has not emitted its
// events yet: a crash then still asks for a resync.
func (c *Client) MarkPresented(ctx context.Context) error {
	c.eventMu.Lock()
	seq := c.emitted
	skip := c.lost || len(c.events) > 0
	c.eventMu.Unlock()
	if skip || seq <= c.presentedSeq() {
		return nil
	}
	if _, err := c.store.Apply(ctx, MarkPresented{Seq: seq}); err != nil {
		return fmt.Errorf("mark presented: %w", err)
	}
	c.eventMu.Lock()
	if seq > c.presented {
		c.presented = seq
	}
	c.eventMu.Unlock()
	return nil
}

func (c *Client) presentedSeq() uint64 {
	c.eventMu.Lock()
	defer c.eventMu.Unlock()
	return c.presented
}

// fail consults the failpoint hook.
func (c *Client) fail(kind, point string) error {
	if c.cfg.Failpoint == nil {
		return nil
	}
	if err := c.cfg.Failpoint(kind + "/" + point); err != nil {
		return fmt.Errorf("failpoint %s/%s: %w: %w", kind, point, ErrInjected, err)
	}
	return nil
}

// peer returns the live state of a peer, loading it from the store once.
// Callers hold c.mu.
func (c *Client) peerLocked(ctx context.Context, peer Address) (*peerState, error) {
	if ps, ok := c.peers[peer]; ok {
		return ps, nil
	}
	st, err := c.store.Peer(ctx, peer)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", peer, err)
	}
	ps := &peerState{pinned: st.Pinned, version: st.SessionVersion, replaces: st.Replaces, refused: st.RefusedOneTime}
	if st.Session != nil {
		if ps.session, err = session.UnmarshalSession(st.Session); err != nil {
			return nil, fmt.Errorf("load session with %s: %w", peer, err)
		}
		if st.PastChains != nil {
			past, err := session.UnmarshalPastChains(st.PastChains)
			if err != nil {
				return nil, fmt.Errorf("load past chains of %s: %w", peer, err)
			}
			if past.Session() == ps.session.ID {
				ps.past = past
			}
		}
	}
	c.peers[peer] = ps
	return ps, nil
}

// newEnvelopeID draws a random envelope ID.
func (c *Client) newEnvelopeID() (wire.EnvelopeID, error) {
	var id wire.EnvelopeID
	if _, err := c.cfg.Random.Read(id[:]); err != nil {
		return id, fmt.Errorf("envelope id: %w", err)
	}
	return id, nil
}

// seal encrypts a frame on s for peer and returns the envelope.
func (c *Client) seal(s *session.Session, peer Address, frame []byte) (wire.Envelope, error) {
	envID, err := c.newEnvelopeID()
	if err != nil {
		return wire.Envelope{}, err
	}
	typ, payload, err := s.Encrypt(envID, frame)
	if err != nil {
		return wire.Envelope{}, fmt.Errorf("encrypt for %s: %w", peer, err)
	}
	return wire.Envelope{Type: typ, ID: envID, Sender: c.self.String(), Recipient: peer.String(), Payload: payload}, nil
}

// digest is the body digest kept for finalized messages.
func digest(body []byte) [32]byte { return sha256.Sum256(body) }

// SafetyNumber returns the safety number with a peer (Safety's number).
func (c *Client) SafetyNumber(ctx context.Context, peer Address) (string, error) {
	s, err := c.Safety(ctx, peer)
	return s.Number, err
}

// SafetyBasis names what a safety number was computed from.
type SafetyBasis string

// The two bases of a safety number.
const (
	// SafetyAccounts: the two people's account keys, once this device
	// holds the peer's device list: the same number on every device of
	// either person, unchanged by linking or removing a device.
	SafetyAccounts SafetyBasis = "accounts"
	// SafetyDevices: the two devices' identity keys, while this device
	// holds no list for the peer (or has no account itself).
	SafetyDevices SafetyBasis = "devices"
)

// SafetyNumberView is a safety number and its basis. Two people compare
// numbers of the same basis; a device that shows "devices" while the other
// shows "accounts" has not fetched the other person's list yet.
type SafetyNumberView struct {
	Number string
	Basis  SafetyBasis
}

// Safety returns the safety number with peer: from the two account keys
// when this device holds its own account's list and the peer's, and the
// peer's list names every device of the person pinned here with its
// pinned identity (listVouchesForPins); else from this device's identity and the peer device's pinned one
// (so a device whose identity changed, or that the list held does not
// name, is never vouched for by its person's account number).
func (c *Client) Safety(ctx context.Context, peer Address) (SafetyNumberView, error) {
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return SafetyNumberView{}, err
	}
	if ps.pinned == nil {
		return SafetyNumberView{}, fmt.Errorf("safety number with %s: %w", peer, ErrNoIdentityPinned)
	}
	if peer.User != c.self.User {
		held, ok, err := c.store.PeerAccount(ctx, peer.User)
		if err != nil {
			return SafetyNumberView{}, err
		}
		own, err := LoadAccount(ctx, c.store)
		if err != nil && !errors.Is(err, ErrNoAccount) {
			return SafetyNumberView{}, err
		}
		if err == nil && ok {
			vouched, err := c.listVouchesForPins(ctx, held.List)
			if err != nil {
				return SafetyNumberView{}, err
			}
			if vouched {
				return SafetyNumberView{Basis: SafetyAccounts,
					Number: session.AccountSafetyNumber(c.self.User, own.List.AccountKey, peer.User, held.List.AccountKey)}, nil
			}
		}
	}
	return SafetyNumberView{Basis: SafetyDevices, Number: SafetyNumber(c.self, c.id.Public(), peer, *ps.pinned)}, nil
}

// maxSafetyPins bounds the devices of one person whose pins a safety
// number checks against the person's list: a list names at most eight
// active devices, and the revoked ones and those pinned before a removal
// stay far below this.
const maxSafetyPins = 64

// listVouchesForPins reports whether l, the person's list held here,
// names every device of the person pinned here with its pinned identity
// (active, or revoked since): only then does the accounts' number speak for every session
// this device has with the person (a device pinned on first use that the
// list does not name, or names with other keys, could be a relay's).
func (c *Client) listVouchesForPins(ctx context.Context, l wire.DeviceList) (bool, error) {
	pinned, err := c.store.PinnedDevices(ctx, l.User, maxSafetyPins+1)
	if err != nil {
		return false, err
	}
	if len(pinned) == 0 || len(pinned) > maxSafetyPins {
		return false, nil
	}
	for _, d := range pinned {
		ps, err := c.snapshot(ctx, d)
		if err != nil {
			return false, err
		}
		// Active or revoked since: either way the account signed for
		// exactly the identity pinned here.
		e, found := findEntry(&l, d.Device)
		if ps.pinned == nil || !found || e.SigningKey != ps.pinned.SigningKey || e.DHKey != ps.pinned.DHKey {
			return false, nil
		}
	}
	return true, nil
}

// ErrNoIdentityPinned means a safety number was asked of a peer whose
// identity this device has not pinned yet: no message went either way, and
// no identity was accepted.
var ErrNoIdentityPinned = errors.New("no identity pinned yet")

// isCancel reports whether err is a cancellation, which propagates instead of
// being reported as a failed ACK.
func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// LoadIdentity reads a profile's own address, relay URL and identity without
// opening a client: the relay connection needs the identity to authenticate
// before the client that uses it exists.
func LoadIdentity(ctx context.Context, st Store) (Address, RelaySettings, *Identity, error) {
	prof, err := st.Profile(ctx)
	if err != nil {
		return Address{}, RelaySettings{}, nil, fmt.Errorf("read profile: %w", err)
	}
	id, err := session.UnmarshalIdentity(prof.Identity)
	if err != nil {
		return Address{}, RelaySettings{}, nil, fmt.Errorf("read profile: %w", err)
	}
	return prof.Self, prof.Relay, id, nil
}
