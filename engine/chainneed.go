package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/wire"
)

// Need-chain requests (docs/protocol.md, "Sender chains", "No permanent
// unable to decrypt"). A member that holds a chain message whose chain it
// lacks asks the chain's sender for it (frame kind 9) on the pairwise
// session, sent like an acknowledgement and never pending: the request's
// encryption step is a plan of its own (NeedChainAsk), applied in the
// transaction of the receive page that held the message, after its rows,
// as a cumulative ACK is. The sender answers at once: a member whose
// announcement is still pending gets it again (the lane's retry, right
// after the commit, instead of waiting for the retry schedule); a member
// that acknowledged it and asks all the same (it lost its state) gets a
// fresh announcement lane (NeedChainEffect), sent at once too.
//
// Both sides are bounded, because anyone with a session can send a
// request, and a hostile relay can forge a chain message (its chain
// unknown, nothing can be checked) from any sender this device has a
// session with: a device asks at most once per (sender, chain) every
// NeedChainRepeat, for a chain message it holds (itself bounded per sender,
// MaxHeldPerSender); a sender answers at most once per (member, chain)
// every NeedChainRepeat, only a member of the chain's group at its
// generation, and only for its own live chain; a fresh announcement
// replaces the member's one record of that chain (chain_member), so at
// most one announcement lane per (chain, member) is pending. Anything else
// is taken as a repeat: the session steps, nothing is stored, nothing is
// sent.

// NeedChainRepeat is how long a device waits before asking again for a
// chain it asked for, and how long a sender waits before answering the
// same member for the same chain again. The answer goes at once, so a
// second request within this time would only repeat one in flight; past
// it the first (or its answer) was lost, and the sender's ordinary retry
// covers the time between.
const NeedChainRepeat = time.Minute

// maxNeedChainMarks bounds each side's record of the requests it sent or
// answered lately; past it the oldest are forgotten first (a forgotten
// mark only allows one more request or answer).
const maxNeedChainMarks = 4096

// Need-chain refusals, matched with errors.Is.
var (
	// ErrNeedChainUnknown means a need-chain request names no live chain
	// of this device, or comes from a device that is not a member of its
	// group at its generation.
	ErrNeedChainUnknown = errors.New("need-chain request for no chain of this device's to that member")
)

// NeedChainAsk is the encryption step of a need-chain request this device
// sends Peer for Chain (held at Position): the request envelope and the
// session it leaves. It stores nothing else; the request is never pending.
type NeedChainAsk struct {
	Peer     Address
	Chain    wire.ChainID
	Position uint32
	Session  SessionWrite
	Request  Outgoing
}

func (NeedChainAsk) plan() {}

// Kind implements Plan.
func (NeedChainAsk) Kind() string { return "need-chain-ask" }

// NeedChainEffect is a need-chain request from a member that acknowledged
// the announcement of this device's chain for Group and lost it: the
// member is announced the chain again on a fresh pending lane (Announce),
// recorded as its announcement of Chain, not acknowledged, in place of
// the one before.
type NeedChainEffect struct {
	Group    wire.GroupID
	Chain    wire.ChainID
	Announce ChainAnnouncement
}

func (NeedChainEffect) effect() {}

// needKey names one (peer, chain) pair in the need-chain marks.
type needKey = chainKey

// needMarks are the need-chain requests sent or answered lately, by (peer,
// chain), under recoveryMu.
type needMarks map[needKey]time.Time

// allow reports whether k may go at now and, if so, marks it.
func (m *needMarks) allow(k needKey, now time.Time) bool {
	if *m == nil {
		*m = make(needMarks)
	}
	if at, ok := (*m)[k]; ok && now.Sub(at) < NeedChainRepeat && !now.Before(at) {
		return false
	}
	if len(*m) >= maxNeedChainMarks {
		var oldest needKey
		var first time.Time
		for key, at := range *m {
			if now.Sub(at) >= NeedChainRepeat {
				delete(*m, key)
				continue
			}
			if first.IsZero() || at.Before(first) {
				oldest, first = key, at
			}
		}
		if len(*m) >= maxNeedChainMarks {
			delete(*m, oldest)
		}
	}
	(*m)[k] = now
	return true
}

// noteNeedChain records, for the page's need-chain requests, that the
// batch holds a chain message of sender's chain at position.
func (bs *batchState) noteNeedChain(sender Address, chain wire.ChainID, position uint32) {
	k := needKey{sender, chain}
	if _, ok := bs.needs[k]; ok {
		return
	}
	bs.needs[k] = position
	bs.needOrder = append(bs.needOrder, k)
}

// needChainPlans seals the page's need-chain requests, after its rows: one
// per (sender, chain) held, within NeedChainRepeat, on the sender's
// session as the page leaves it. A session that cannot send asks nothing:
// the sender's retry covers it.
func (c *Client) needChainPlans(bs *batchState) ([]prepared, error) {
	var out []prepared
	for _, k := range bs.needOrder {
		ps := bs.work[k.sender]
		if ps == nil || ps.session == nil || !canSend(ps.session) {
			continue
		}
		c.recoveryMu.Lock()
		ok := c.needAsked.allow(k, c.cfg.Now())
		c.recoveryMu.Unlock()
		if !ok {
			continue
		}
		frame, err := wire.EncodeNeedChain(wire.NeedChain{Chain: k.chain, Position: bs.needs[k]})
		if err != nil {
			return nil, err
		}
		if err := c.fail("need-chain-ask", "before-seal"); err != nil {
			return nil, err
		}
		cand := ps.session.Clone()
		env, err := c.seal(cand, k.sender, frame)
		if err != nil {
			return nil, fmt.Errorf("ask %s for chain %x: %w", k.sender, k.chain[:4], err)
		}
		sw, err := sessionWrite(k.sender, ps.version, cand)
		if err != nil {
			return nil, err
		}
		ps.session, ps.version = cand, ps.version+1
		req := Outgoing{Envelope: env, IsAck: true}
		out = append(out, prepared{plan: NeedChainAsk{Peer: k.sender, Chain: k.chain, Position: bs.needs[k], Session: sw, Request: req}, ack: &req})
	}
	return out, nil
}

// receiveNeedChain takes a need-chain request from a member of the group
// of this device's live chain it names: answered, within
// NeedChainRepeat, by a fresh announcement lane (NeedChainEffect) when the
// member acknowledged the announcement or has none, and otherwise by the
// retry of its pending announcement right after the commit
// (answerNeedChains). A request for no such chain, or from a device that
// is not a member of its group at its generation, is dropped
// (ErrNeedChainUnknown); one within NeedChainRepeat of the last answer to
// that member for that chain steps the session and does nothing else.
func (c *Client) receiveNeedChain(ctx context.Context, bs *batchState, in *incoming, op opening) (prepared, error) {
	n, err := wire.DecodeNeedChain(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, err), nil
	}
	own, found, err := c.store.OwnChainByID(ctx, n.Chain)
	if err != nil {
		return prepared{}, err
	}
	unknown := func() prepared {
		return in.drop(wire.LogicalID{}, fmt.Errorf("need-chain from %s for chain %x: %w", in.sender, n.Chain[:4], ErrNeedChainUnknown))
	}
	var zero wire.GroupID
	if !found || n.Group != zero && (n.Group != own.Group || n.Generation != own.Generation) || in.sender == c.self {
		return unknown(), nil
	}
	g, known, err := bs.group(ctx, c.store, own.Group)
	if err != nil {
		return prepared{}, err
	}
	if !known || g.Roster.Generation != own.Generation || !g.Roster.HasUser(in.sender.User) {
		// Only the live generation's chain is answered: an older one's
		// messages are retried pairwise.
		return unknown(), nil
	}
	if v, err := c.vouchSender(ctx, in.sender, senderKey(in, op)); err != nil {
		return prepared{}, err
	} else if !vouchedMember(g.Roster, in.sender.String(), v) {
		// A device its person's list does not vouch for.
		return unknown(), nil
	}
	res := ReceiveResult{Kind: ResultNeedChain, Sender: in.sender, Group: &own.Group, Generation: own.Generation}
	c.recoveryMu.Lock()
	ok := c.needAnswered.allow(needKey{in.sender, n.Chain}, c.cfg.Now())
	c.recoveryMu.Unlock()
	if !ok {
		return c.groupVerdict(bs, in, op, RepeatEffect{}, nil, res)
	}
	for _, m := range own.Members {
		if m.Member == in.sender && !m.Acked {
			res.ID, res.needAnnounce = m.AnnounceID, true
			return c.groupVerdict(bs, in, op, RepeatEffect{}, nil, res)
		}
	}
	sc, err := session.UnmarshalSenderChain(own.Record)
	if err != nil {
		return prepared{}, fmt.Errorf("sender chain of group %x: %w: %w", own.Group[:4], ErrMalformedState, err)
	}
	var aid wire.LogicalID
	if _, err := c.cfg.Random.Read(aid[:]); err != nil {
		return prepared{}, fmt.Errorf("chain announcement: id: %w", err)
	}
	f, err := wire.EncodeChainAnnounce(sc.Announce(aid))
	if err != nil {
		return prepared{}, err
	}
	res.ID, res.needAnnounce = aid, true
	effect := NeedChainEffect{Group: own.Group, Chain: own.Chain, Announce: ChainAnnouncement{Recipient: in.sender, ID: aid, Frame: f}}
	return c.groupVerdict(bs, in, op, effect, nil, res)
}

// answerNeedChains sends, right after the commit of the page that took
// them, the announcements that need-chain requests asked for: each a
// pending lane (kept or fresh) sent again on the member's session, as a
// retry sends it. One that does not go stays pending for the retries.
func (c *Client) answerNeedChains(ctx context.Context, res []ReceiveResult) {
	for _, r := range res {
		if r.Kind != ResultNeedChain || !r.needAnnounce {
			continue
		}
		if err := c.resendOne(ctx, r.Sender, r.ID); err != nil && ctx.Err() == nil {
			var notSent *MessageNotSentError
			if !errors.As(err, &notSent) && !errors.Is(err, ErrNotPending) {
				c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "need-chain", Peer: r.Sender, Err: err})
			}
		}
	}
}

// resendOne sends pending message id to peer again, as Retry would.
func (c *Client) resendOne(ctx context.Context, peer Address, id wire.LogicalID) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	m, err := c.store.Outbound(ctx, peer, id)
	if err != nil {
		return err
	}
	return c.retryOne(ctx, peer, m)
}
