package engine

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parley-chat/parley/wire"
)

// Message requests. With Config.Requests set, the first message from a
// device this profile has not accepted (Store.Accepted) is staged as a
// request: its session and its pending message are stored by the receive
// (the one-time prekey is consumed in that same transaction), but nothing
// goes back to the sender, no ACK and no announcement, and the message is
// neither listed among the pending deliveries nor committed by the policy.
// Further messages from the requester join the request. AcceptRequest
// promotes the request into ordinary pending deliveries; RejectRequest
// deletes it (and with block, stops the sender at the relay); requests
// older than RequestLifetime are swept by the maintenance.

// Bounds on requests. Each bites with an event (EventRequestBound) and
// drops the envelope that would cross it, as the pending caps do: the
// sender keeps it pending and learns nothing.
const (
	// MaxRequests is the most open requests: a person reads a list of
	// requests, and fresh addresses are free; past this many a new stranger
	// waits until the list is dealt with.
	MaxRequests = 64
	// MaxRequestBytes is the most bytes of message bodies held in all open
	// requests together: strangers' pending messages are bounded in count
	// by MaxPendingStrangers, but 256 of the largest bodies are 64 MiB;
	// requests are held to a quarter of that.
	MaxRequestBytes = 16 << 20
	// MaxRequestPreview is the most bytes of a request's preview (the
	// start of its first message, cleaned of control characters): one line
	// of a list, never a whole message.
	MaxRequestPreview = 160
	// RequestLifetime is how long a request waits for an answer before the
	// maintenance deletes it: a month covers a holiday; a request nobody
	// answered in that time is as good as rejected, and its messages
	// should not sit on disk for ever.
	RequestLifetime = 30 * 24 * time.Hour
)

// ErrRequestPending means the message belongs to an open request: accept it
// first.
var ErrRequestPending = errors.New("message request not accepted")

// ErrRequestBound means an envelope was dropped because a bound on requests
// (MaxRequests, MaxRequestBytes) would be crossed.
var ErrRequestBound = errors.New("message requests full")

// ErrBlocked means an envelope came from a blocked sender and was dropped.
var ErrBlocked = errors.New("sender blocked")

// RequestStage is what a receive adds when its message is (or joins) a
// request.
type RequestStage struct {
	Join    bool   // the sender's request is open already
	Preview string // the cleaned preview, of the first message only
	Bytes   int    // body bytes counted against MaxRequestBytes
	At      time.Time
}

// AcceptRequest promotes an open request from Peer into ordinary pending
// deliveries and records Peer as accepted. Count is the number of messages
// the request held when it was read: a request that grew since is refused
// (ErrConflict), so that exactly what was shown is accepted. Count 0 accepts
// a peer that has no request (before it writes).
type AcceptRequest struct {
	Peer  Address
	Count int
	At    time.Time
	// Rosters are the roster changes that waited in the request, each
	// applied (or only deleted) as RosterAdoption says; Sessions the
	// session steps of their ACKs, in order.
	Rosters  []RosterAdoption
	Sessions []SessionWrite
}

// RejectRequest deletes an open request: its pending messages and the
// session it set up (the one-time prekey it used stays consumed). With
// Block, the sender is recorded as blocked: its envelopes are dropped
// unopened, and the relay is told (MarkBlockTold once it has heard).
type RejectRequest struct {
	Peer  Address
	Block bool
	At    time.Time
}

// SweepRequests deletes, as RejectRequest without a block, every request
// first seen before Before.
type SweepRequests struct{ Before time.Time }

// MarkBlockTold records that the relay heard of the block of Peer
// (Blocked) or of its unblock.
type MarkBlockTold struct {
	Peer    Address
	Blocked bool
}

// Unblock ends the block of Peer: its envelopes are opened again, and the
// relay, if it heard of the block, is told (MarkBlockTold). It fails with
// ErrNotPending when Peer is not blocked.
type Unblock struct {
	Peer Address
	At   time.Time
}

// BlockChange is a block (Blocked) or an unblock the relay has not heard of.
type BlockChange struct {
	Peer    Address
	Blocked bool
}

func (AcceptRequest) plan() {}
func (RejectRequest) plan() {}
func (SweepRequests) plan() {}
func (MarkBlockTold) plan() {}
func (Unblock) plan()       {}

// Kind implements Plan.
func (Unblock) Kind() string { return "unblock" }

// Kind implements Plan.
func (AcceptRequest) Kind() string { return "request-accept" }

// Kind implements Plan: "request-block" for a block.
func (p RejectRequest) Kind() string {
	if p.Block {
		return "request-block"
	}
	return "request-reject"
}

// Kind implements Plan.
func (SweepRequests) Kind() string { return "request-sweep" }

// Kind implements Plan.
func (MarkBlockTold) Kind() string { return "block-told" }

// Request is one open message request.
type Request struct {
	Peer      Address
	FirstSeen time.Time
	LastSeen  time.Time
	Count     int    // messages held
	Bytes     int64  // their bodies' bytes
	Preview   string // the start of the first message, cleaned
}

// RequestStore is the read side of requests, a part of Store.
type RequestStore interface {
	// Requests lists the open requests, oldest first.
	Requests(ctx context.Context) ([]Request, error)
	// Request returns the open request from peer, or ErrNotPending.
	Request(ctx context.Context, peer Address) (Request, error)
	// RequestTotals counts the open requests and their bytes.
	RequestTotals(ctx context.Context) (count int, bytes int64, err error)
	// Blocked reports whether peer is blocked.
	Blocked(ctx context.Context, peer Address) (bool, error)
	// Blocks lists the blocked senders.
	Blocks(ctx context.Context) ([]Address, error)
	// BlocksUntold lists the blocks and unblocks the relay has not heard
	// of.
	BlocksUntold(ctx context.Context) ([]BlockChange, error)
}

// requestPreview is the preview of a request: the start of body, cut at a
// character boundary, with control characters escaped.
// requestBody is what a request's preview shows of a message: its text,
// or for a file its name, size and type (never the manifest, whose key is
// no one's to see before the owner fetches it).
func requestBody(content wire.ContentType, body []byte) []byte {
	if m, ok := FileOf(content, body); ok {
		return fileHistoryBody(m)
	}
	return body
}

func requestPreview(body []byte) string {
	s := strings.ToValidUTF8(string(body), "\uFFFD")
	if len(s) > MaxRequestPreview {
		cut := MaxRequestPreview
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return wire.EscapeControls(s)
}

// requestState is what one batch of receives counted of the requests.
type requestState struct {
	blocked map[Address]bool // peer is blocked (read)
	open    map[Address]bool // peer has an open request (read or staged)
	count   int              // open requests; -1 until read
	bytes   int64
}

func newRequestState() *requestState {
	return &requestState{blocked: map[Address]bool{}, open: map[Address]bool{}, count: -1}
}

// requests returns the store's request side when request mode is on.
func (c *Client) requests() (RequestStore, bool) {
	return c.store, c.cfg.Requests
}

// blockedIn reports whether sender is blocked, read once per batch.
func (c *Client) blockedIn(ctx context.Context, bs *batchState, sender Address) (bool, error) {
	rs := c.store
	if b, known := bs.requests.blocked[sender]; known {
		return b, nil
	}
	b, err := rs.Blocked(ctx, sender)
	if err == nil {
		bs.requests.blocked[sender] = b
	}
	return b, err
}

// stageRequest decides whether a new delivery from sender is (or joins) a
// request. It returns nil for a peer that is accepted, and ErrRequestBound
// when the delivery would cross a bound. key is the identity the sender's
// session holds (senderKey), which another accepted device of the same
// person vouches for only when the person's list names it (personAccepted).
func (c *Client) stageRequest(ctx context.Context, bs *batchState, sender Address, key *IdentityKey, shown []byte, size int, at time.Time) (*RequestStage, error) {
	rs, ok := c.requests()
	if !ok {
		return nil, nil
	}
	st := bs.requests
	open, known := st.open[sender]
	if known && !open {
		return nil, nil // accepted
	}
	if !known {
		accepted, err := c.store.Accepted(ctx, sender)
		if err == nil && !accepted {
			accepted, err = c.personAccepted(ctx, sender, key)
		}
		if err != nil {
			return nil, err
		}
		if accepted {
			st.open[sender] = false
			return nil, nil
		}
		_, err = rs.Request(ctx, sender)
		switch {
		case err == nil:
			open = true
		case !errors.Is(err, ErrNotPending):
			return nil, err
		}
	}
	if st.count < 0 {
		n, b, err := rs.RequestTotals(ctx)
		if err != nil {
			return nil, err
		}
		st.count, st.bytes = n, b
	}
	stage := &RequestStage{Join: open, Bytes: size, At: at}
	if !open {
		if st.count >= MaxRequests {
			c.emit(Event{Kind: EventRequestBound, At: c.cfg.Now(), Peer: sender, Op: "requests", Count: st.count})
			return nil, ErrRequestBound
		}
		stage.Preview = requestPreview(shown)
	}
	if st.bytes+int64(size) > MaxRequestBytes {
		c.emit(Event{Kind: EventRequestBound, At: c.cfg.Now(), Peer: sender, Op: "bytes", Count: st.count})
		return nil, ErrRequestBound
	}
	if !open {
		st.count++
	}
	st.open[sender] = true
	st.bytes += int64(size)
	return stage, nil
}

// groupVouched reports whether a message of group (nil for a one-to-one
// message) skips the requests because a person this device accepted runs
// the group: a change this device or a peer it accepted signed counts in
// its roster (vouches). Being in a group that someone accepted made accepts
// its members for that group's messages; a group a stranger made, whoever
// its roster names as admins, vouches for nobody, so its messages stay
// requests of their senders.
func (c *Client) groupVouched(ctx context.Context, bs *batchState, group *wire.GroupID) (bool, error) {
	if group == nil {
		return false, nil
	}
	if _, ok := c.requests(); !ok {
		return false, nil
	}
	gs := c.store
	g, known, err := bs.group(ctx, gs, *group)
	if err != nil || !known {
		return false, err
	}
	return c.vouches(ctx, g)
}

// inRequest reports whether sender has an open request, as this batch
// knows it.
func (c *Client) inRequest(ctx context.Context, bs *batchState, sender Address) (bool, error) {
	if open, known := bs.requests.open[sender]; known {
		return open, nil
	}
	return c.requestOpen(ctx, sender)
}
