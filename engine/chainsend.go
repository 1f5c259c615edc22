package engine

import (
	"context"
	"fmt"
	"sort"

	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/wire"
)

// Sending by a sender chain (docs/protocol.md, "Sender chains"). A group of
// ChainMinMembers or more sends each message by this device's chain for the
// group's generation to the members that acknowledged the chain's
// announcement, and pairwise (the pump) to the rest; a member never
// announced the chain gets the announcement, pending on a lane of its own,
// in the same transaction. The chain is sealed once, its lanes stored with
// their envelope (type 4) and the chain advanced in the group send's plan;
// the envelopes are handed off after the commit, in SubmitMultis of at most
// wire.MaxSubmitMultiMailboxes mailboxes where the relay serves it. Each lane is still pending until its member's ACK; a
// retry goes pairwise, so a member that lost the chain still gets the
// message.

// ChainMinMembers is the smallest group (members, this device included)
// whose messages go by a sender chain: for two or three the announcements
// would cost more than they save.
const ChainMinMembers = 4

// MultiSubmitter is the part of Relay that hands the relay one payload for
// several mailboxes (transport.Conn.SubmitMulti): one upload where the
// relay serves wire.FeatureSubmitMulti, one envelope per mailbox otherwise.
type MultiSubmitter interface {
	SubmitMulti(ctx context.Context, m wire.SubmitMulti) []error
}

// chainBatch is one chain message's envelopes, committed and not yet
// handed off: one SubmitMulti per wire.MaxSubmitMultiMailboxes lanes (a
// group of persons with several devices each has more lanes than one
// request names).
type chainBatch struct {
	id     wire.LogicalID
	multis []wire.SubmitMulti
}

// chainPart is what going by the chain adds to a group send.
type chainPart struct {
	write    *OwnChainWrite
	announce []ChainAnnouncement
	batch    *chainBatch // nil when no lane goes by the chain
}

// prepareChainSend decides which lanes of message mid go by this device's
// chain for group g, seals the message for them once, sets their envelopes
// in lanes, and returns what the plan adds (nil: every lane is pairwise).
// Callers hold sendMu.
func (c *Client) prepareChainSend(ctx context.Context, g GroupInfo, mid wire.LogicalID, frame []byte, lanes []GroupLane) (*chainPart, error) {
	if c.cfg.PairwiseGroups || len(g.Roster.Members) < ChainMinMembers {
		return nil, nil
	}
	gen := g.Roster.Generation
	now := c.cfg.Now()
	own, found, err := c.store.OwnChain(ctx, g.ID, gen)
	if err != nil {
		return nil, err
	}
	var sc *session.SenderChain
	if found {
		if sc, err = session.UnmarshalSenderChain(own.Record); err != nil {
			return nil, fmt.Errorf("sender chain of group %x: %w: %w", g.ID[:], ErrMalformedState, err)
		}
	}
	if sc == nil || sc.Due(now) || sc.Next() > session.MaxChainPosition {
		// A new chain (the first at this generation, or a rotation): no
		// member holds it yet.
		if sc, err = session.NewSenderChain(c.cfg.Random, g.ID, gen, now); err != nil {
			return nil, err
		}
		own = OwnChain{Chain: sc.ID()}
	}
	announced := make(map[Address]bool, len(own.Members))
	acked := make(map[Address]bool, len(own.Members))
	for _, m := range own.Members {
		announced[m.Member] = true
		acked[m.Member] = m.Acked
	}
	part := &chainPart{}
	var chained []int
	for i, l := range lanes {
		switch {
		case acked[l.Recipient]:
			chained = append(chained, i)
		case !announced[l.Recipient]:
			var aid wire.LogicalID
			if _, err := c.cfg.Random.Read(aid[:]); err != nil {
				return nil, fmt.Errorf("chain announcement: id: %w", err)
			}
			f, err := wire.EncodeChainAnnounce(sc.Announce(aid))
			if err != nil {
				return nil, err
			}
			part.announce = append(part.announce, ChainAnnouncement{Recipient: l.Recipient, ID: aid, Frame: f})
		}
	}
	if len(chained) > 0 {
		if err := c.fail("group-send", "before-chain-seal"); err != nil {
			return nil, err
		}
		m, err := sc.Seal(c.cfg.Random, c.self.String(), frame)
		if err != nil {
			return nil, fmt.Errorf("seal for group %x: %w", g.ID[:], err)
		}
		payload, err := wire.EncodeChainMessage(m)
		if err != nil {
			return nil, err
		}
		multi := wire.SubmitMulti{Type: wire.EnvelopeChain, Sender: c.self.String(), Payload: payload}
		for _, i := range chained {
			envID, err := c.newEnvelopeID()
			if err != nil {
				return nil, err
			}
			to := lanes[i].Recipient.String()
			multi.Mailboxes = append(multi.Mailboxes, wire.Mailbox{EnvelopeID: envID, Recipient: to})
			lanes[i].Out = &Outgoing{Envelope: wire.Envelope{Type: wire.EnvelopeChain, ID: envID, Sender: c.self.String(), Recipient: to, Payload: payload}, Owner: mid}
		}
		sort.Slice(multi.Mailboxes, func(a, b int) bool { return multi.Mailboxes[a].Recipient < multi.Mailboxes[b].Recipient })
		part.batch = &chainBatch{id: mid}
		for all := multi.Mailboxes; len(all) > 0; {
			n := min(len(all), wire.MaxSubmitMultiMailboxes)
			one := multi
			one.Mailboxes, all = all[:n:n], all[n:]
			part.batch.multis = append(part.batch.multis, one)
		}
		c.chainLanes.Add(int64(len(chained)))
	}
	if !found || part.batch != nil || len(part.announce) > 0 || own.Chain != sc.ID() {
		rec, err := sc.MarshalBinary()
		if err != nil {
			return nil, err
		}
		part.write = &OwnChainWrite{Group: g.ID, Generation: gen, Chain: sc.ID(), Record: rec}
	}
	if part.write == nil {
		return nil, nil
	}
	return part, nil
}

// queueChain keeps a committed chain message's envelopes for the next
// hand-off (flushChains): the pump's, or the send's that stored it.
func (c *Client) queueChain(b *chainBatch) {
	if b == nil {
		return
	}
	c.mu.Lock()
	c.chainQueue = append(c.chainQueue, b)
	c.mu.Unlock()
}

// flushChains hands off every queued chain message, one SubmitMulti per
// wire.MaxSubmitMultiMailboxes lanes
// (per-member envelopes where the relay has no SubmitMulti), and returns
// what became of each lane, by message and member: nil when the relay took
// it. A lane the relay did not take stays pending; a retry sends it
// pairwise. Envelopes that never leave (a crash before the hand-off) are
// the same: attempted lanes, pending until a retry.
func (c *Client) flushChains(ctx context.Context) map[wire.LogicalID]map[Address]error {
	c.mu.Lock()
	q := c.chainQueue
	c.chainQueue = nil
	c.mu.Unlock()
	if len(q) == 0 {
		return nil
	}
	out := make(map[wire.LogicalID]map[Address]error, len(q))
	ms, multi := c.relay.(MultiSubmitter)
	for _, b := range q {
		res := out[b.id]
		if res == nil {
			res = make(map[Address]error)
			out[b.id] = res
		}
		for _, m := range b.multis {
			c.flushMulti(ctx, b.id, m, ms, multi, res)
		}
	}
	return out
}

// flushMulti hands off one SubmitMulti of chain message id (per-member
// envelopes where the relay has no SubmitMulti) and records in res what
// became of each lane.
func (c *Client) flushMulti(ctx context.Context, id wire.LogicalID, m wire.SubmitMulti, ms MultiSubmitter, multi bool, res map[Address]error) {
	envs := make([]wire.Envelope, len(m.Mailboxes))
	ids := make([]wire.LogicalID, len(envs))
	for i := range envs {
		envs[i] = m.Envelope(i)
		ids[i] = id
	}
	var errs []error
	if err := c.fail("group-send", "before-handoff"); err != nil {
		errs = make([]error, len(envs))
		for i := range errs {
			errs[i] = err
		}
	} else if multi {
		errs = ms.SubmitMulti(withHandoff(ctx, HandoffMessage), m)
		if len(errs) == len(envs) {
			c.noteHandedOff(envs, ids, errs)
		}
	} else {
		errs = c.handOffMessages(ctx, "group-send", envs, ids)
	}
	now := c.cfg.Now()
	for i, env := range envs {
		peer, _ := ParseAddress(env.Recipient)
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		res[peer] = err
		if err != nil {
			c.emit(Event{Kind: EventNotSent, At: now, Peer: peer, ID: id, Err: err})
		} else {
			c.emit(Event{Kind: EventSent, At: now, Peer: peer, ID: id})
		}
	}
}
