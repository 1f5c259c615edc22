package relayserver

import (
	"errors"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// A connection's envelopes (Submit and SubmitBatch) are appended by a
// goroutine of their own, so that the reader goes on reading while the
// store makes them durable: the envelopes that arrive meanwhile are
// appended together, in one Store.AppendBatch (one transaction on SQLite,
// publishes in flight together on NATS), and each is answered once that
// call says it is stored. One call at a time and in the order read, so a
// sender's envelopes to a mailbox keep the order it sent them in. Any
// other request waits until every envelope before it is answered (as for
// blob puts, blobput.go), so a connection's requests still take effect in
// the order it sent them.

const (
	// maxSubmitsQueued bounds the envelopes of a connection that wait for
	// the store or are being appended: one full SubmitBatch, or as many
	// single Submits. Past it the reader waits, and the client's further
	// requests wait in its socket.
	maxSubmitsQueued = wire.MaxSubmitBatchEnvelopes
	// maxSubmitBytesQueued bounds their bytes, 1 MiB as for blob puts
	// (maxPutsQueued), so that a connection of large envelopes holds no
	// more of the relay's memory than an uploading one. A request larger
	// than the bound on its own is still taken when nothing waits.
	maxSubmitBytesQueued = 1 << 20
)

// submitQueue is a connection's envelopes waiting for the store.
type submitQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when requests leave the queue or the worker ends
	reqs    []queuedSubmit
	envs    int  // envelopes in reqs
	bytes   int  // their bytes
	running bool // a worker goroutine is appending
}

// queuedSubmit is one Submit, or one SubmitBatch of envelopes.
type queuedSubmit struct {
	req   uint32
	envs  [][]byte
	batch bool // answered by BatchResults, not Accepted/Refused
	// limited counts the batch's envelopes after envs that the message
	// bucket did not pay for: each is answered refused (rate limited).
	limited []wire.EnvelopeID
	// shared, for a SubmitMulti, is the payload every envelope of envs
	// ends with: the store keeps it once (relaystore.AppendItem.Shared).
	shared *relaystore.SharedPayload
}

func (q queuedSubmit) size() int {
	n := 0
	for _, e := range q.envs {
		n += len(e)
	}
	return n
}

// queueSubmit hands a request's envelopes to the connection's submit
// worker, starting it if none runs, and waits while the queue is full.
func (c *conn) queueSubmit(r queuedSubmit) {
	q := &c.subq
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cond == nil {
		q.cond = sync.NewCond(&q.mu)
	}
	size := r.size()
	for len(q.reqs) > 0 && (q.envs+len(r.envs) > maxSubmitsQueued || q.bytes+size > maxSubmitBytesQueued) {
		q.cond.Wait()
	}
	q.reqs = append(q.reqs, r)
	q.envs += len(r.envs)
	q.bytes += size
	if !q.running {
		q.running = true
		go c.submitLoop()
	}
}

// waitSubmits returns once every queued envelope is answered.
func (c *conn) waitSubmits() {
	q := &c.subq
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.running {
		q.cond.Wait()
	}
}

// submitLoop appends what is queued until nothing is left: each time
// every request queued, together.
func (c *conn) submitLoop() {
	q := &c.subq
	for {
		q.mu.Lock()
		if len(q.reqs) == 0 {
			q.running = false
			q.cond.Broadcast()
			q.mu.Unlock()
			return
		}
		group := q.reqs
		q.mu.Unlock()
		c.submitGroup(group)
		q.mu.Lock()
		q.reqs = q.reqs[len(group):]
		for _, r := range group {
			q.envs -= len(r.envs)
			q.bytes -= r.size()
		}
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}

// checked is one envelope after the checks made before the store: either
// decided (refused, or accepted unstored for a blocked sender), or to be
// appended as item number item.
type checked struct {
	id        wire.EnvelopeID
	outcome   wire.SubmitOutcome
	item      int // index in the group's AppendItems; -1 when decided
	recipient string
}

// submitGroup checks every envelope of the group, appends those that pass
// in one AppendBatch, and answers each request.
func (c *conn) submitGroup(group []queuedSubmit) {
	s := c.s
	var items []relaystore.AppendItem
	rels := make(map[string]relaystore.Relation) // per recipient, looked up once
	verdicts := make([][]checked, len(group))
	for i, r := range group {
		verdicts[i] = make([]checked, len(r.envs))
		for j, env := range r.envs {
			verdicts[i][j] = c.checkEnvelope(env, r.shared, rels, &items)
		}
	}
	var results []relaystore.AppendResult
	if len(items) > 0 {
		results = s.store.AppendBatch(c.ctx, items)
		s.metrics.appendGroup.Observe(float64(len(items)))
	}
	stored := make(map[string]bool) // recipients with new rows: woken once
	for i := range verdicts {
		for j, v := range verdicts[i] {
			if v.item < 0 {
				continue
			}
			res := results[v.item]
			v.outcome = c.appendOutcome(res.Err)
			if v.outcome == wire.SubmitAccepted {
				s.metrics.accepted.Inc()
				if len(res.Rows) > 0 {
					stored[v.recipient] = true
				}
				c.recordAccept(v.recipient)
			}
			verdicts[i][j] = v
		}
	}
	for r := range stored {
		s.notify(r)
	}
	for i, r := range group {
		c.answerSubmit(r, verdicts[i])
	}
}

// checkEnvelope checks an envelope against the protocol (size, form,
// sender, recipient) and the recipient's relation to the sender, and
// either decides it or adds it to items. An envelope of a SubmitMulti
// (shared set, its payload) goes to the store as its head and the shared
// payload, kept once for every mailbox.
func (c *conn) checkEnvelope(b []byte, shared *relaystore.SharedPayload, rels map[string]relaystore.Relation, items *[]relaystore.AppendItem) checked {
	s := c.s
	refuse := func(id wire.EnvelopeID, r wire.RefuseReason) checked {
		s.metrics.refused.WithLabelValues(refuseLabel(r)).Inc()
		return checked{id: id, outcome: wire.Refusal(r), item: -1}
	}
	id := envelopeID(b)
	if len(b) > s.lim.MaxEnvelopeSize {
		return refuse(id, wire.RefuseTooLarge)
	}
	env, err := wire.DecodeEnvelope(b)
	if err != nil {
		return refuse(id, wire.RefuseMalformed)
	}
	if env.Sender != c.addr {
		return refuse(id, wire.RefuseWrongSender)
	}
	if a, err := engine.ParseAddress(env.Recipient); err != nil || a.String() != env.Recipient {
		return refuse(id, wire.RefuseMalformed)
	}
	rel, ok := rels[env.Recipient]
	if !ok {
		if rel, err = s.store.Relation(c.ctx, env.Recipient, c.addr, s.now()); err != nil {
			s.log.Error("relation", "err", cause(err))
			return checked{id: env.ID, outcome: wire.SubmitFailed, item: -1}
		}
		rels[env.Recipient] = rel
	}
	if rel.Blocked {
		// Silent: the blocked sender hears what any sender hears.
		s.metrics.blockedDiscarded.Inc()
		return checked{id: env.ID, outcome: wire.SubmitAccepted, item: -1}
	}
	// The store decides how many copies it keeps: one, or none or two when
	// it injects faults (relaystore.WithFaults); either way the sender hears
	// Accepted.
	it := relaystore.AppendItem{Recipient: env.Recipient, Env: b, Copies: 1, From: relaystore.Origin{
		Address: c.addr, IP: c.ip, Envelope: env.ID,
		ToReader: s.reads(env.Recipient), Stranger: !rel.Accepted && env.Recipient != c.addr}}
	if shared != nil && len(b) > len(shared.Payload) {
		it.Env, it.Shared = b[:len(b)-len(shared.Payload)], shared
	}
	*items = append(*items, it)
	return checked{id: env.ID, item: len(*items) - 1, recipient: env.Recipient}
}

// appendOutcome maps the store's answer to one append to the protocol's,
// counting refusals.
func (c *conn) appendOutcome(err error) wire.SubmitOutcome {
	s := c.s
	var r wire.RefuseReason
	switch {
	case err == nil:
		return wire.SubmitAccepted
	case errors.Is(err, relaystore.ErrNotRegistered):
		r = wire.RefuseUnknownRecipient
	case errors.Is(err, relaystore.ErrStrangerRoom):
		s.metrics.limitedBy(limitStrangerRoom)
		r = wire.RefuseMailboxFull
	case errors.Is(err, relaystore.ErrStrangerIPShare):
		s.metrics.limitedBy(limitStrangerIPShare)
		r = wire.RefuseSenderQuota
	case errors.Is(err, relaystore.ErrMailboxFull):
		r = wire.RefuseMailboxFull
	case errors.Is(err, relaystore.ErrSenderQuota):
		s.metrics.limitedBy(limitSenderQuota)
		r = wire.RefuseSenderQuota
	case errors.Is(err, relaystore.ErrIPQuota):
		s.metrics.limitedBy(limitIPShare)
		r = wire.RefuseStoreFull
	case errors.Is(err, relaystore.ErrReserve):
		s.metrics.limitedBy(limitReserve)
		r = wire.RefuseStoreFull
	case errors.Is(err, relaystore.ErrStoreFull):
		s.metrics.limitedBy(limitStoreFull)
		r = wire.RefuseStoreFull
	default:
		s.log.Error("append", "err", cause(err))
		return wire.SubmitFailed
	}
	s.metrics.refused.WithLabelValues(refuseLabel(r)).Inc()
	return wire.Refusal(r)
}

// answerSubmit answers one request: a Submit with Accepted, Refused or
// Error{internal}, a SubmitBatch with BatchResults.
func (c *conn) answerSubmit(r queuedSubmit, vs []checked) {
	if !r.batch {
		v := vs[0]
		if reason, ok := v.outcome.Refused(); ok {
			c.reply(encode(r.req, wire.Refused{EnvelopeID: v.id, Reason: reason}))
			return
		}
		if v.outcome == wire.SubmitAccepted {
			c.reply(encode(r.req, wire.Accepted{EnvelopeID: v.id}))
			return
		}
		c.reply(errorMsg(r.req, wire.ErrorInternal, "the relay could not store the envelope"))
		return
	}
	res := wire.BatchResults{Results: make([]wire.SubmitResult, 0, len(vs)+len(r.limited))}
	for _, v := range vs {
		res.Results = append(res.Results, wire.SubmitResult{EnvelopeID: v.id, Outcome: v.outcome})
	}
	for _, id := range r.limited {
		res.Results = append(res.Results, wire.SubmitResult{EnvelopeID: id, Outcome: wire.Refusal(wire.RefuseRateLimited)})
	}
	c.reply(encode(r.req, res))
}

// submitBatch queues a SubmitBatch's envelopes (submitEnvelopes).
func (c *conn) submitBatch(req uint32, m wire.SubmitBatch) bool {
	c.s.metrics.submitBatch.Observe(float64(len(m.Envelopes)))
	return c.submitEnvelopes(req, m.Envelopes)
}

// maxMultiCopyBytes bounds the envelopes one SubmitMulti expands to (its
// payload once per mailbox), as maxSubmitBytesQueued bounds a connection's
// queue: the envelopes are checked one by one, whole, before the store
// keeps the payload once (memory, SQLite) or per mailbox (NATS), so a
// payload of 256 KiB to 64 mailboxes would hold 16 MiB of the relay's
// memory while it waits. Past it
// every mailbox is refused as too large, and the client sends the
// envelopes one by one.
const maxMultiCopyBytes = maxSubmitBytesQueued

// submitMulti expands a SubmitMulti into one envelope per mailbox, each
// then checked, charged (message tokens, the mailbox's, the sender's and
// the IP's quotas) and answered as an envelope of a SubmitBatch.
func (c *conn) submitMulti(req uint32, m wire.SubmitMulti) bool {
	s := c.s
	s.metrics.submitMulti.Observe(float64(len(m.Mailboxes)))
	if len(m.Payload)*len(m.Mailboxes) > maxMultiCopyBytes {
		res := wire.BatchResults{Results: make([]wire.SubmitResult, len(m.Mailboxes))}
		for i, mb := range m.Mailboxes {
			s.metrics.refused.WithLabelValues(refuseLabel(wire.RefuseTooLarge)).Inc()
			res.Results[i] = wire.SubmitResult{EnvelopeID: mb.EnvelopeID, Outcome: wire.Refusal(wire.RefuseTooLarge)}
		}
		return c.reply(encode(req, res))
	}
	envs := make([][]byte, len(m.Mailboxes))
	for i := range m.Mailboxes {
		b, err := wire.EncodeEnvelope(m.Envelope(i))
		if err != nil { // the decoder checked every field an envelope has
			return c.reply(errorMsg(req, wire.ErrorBadRequest, "malformed message: "+err.Error()))
		}
		envs[i] = b
	}
	return c.queueEnvelopes(req, envs, &relaystore.SharedPayload{Payload: m.Payload})
}

// submitEnvelopes takes a batch's envelopes from the message bucket one
// token each (the first paid when the message was read), refuses those it
// cannot pay for as rate limited, and queues the rest.
func (c *conn) submitEnvelopes(req uint32, envelopes [][]byte) bool {
	return c.queueEnvelopes(req, envelopes, nil)
}

// queueEnvelopes is submitEnvelopes of envelopes that all end with
// shared's payload, when shared is set (a SubmitMulti's).
func (c *conn) queueEnvelopes(req uint32, envelopes [][]byte, shared *relaystore.SharedPayload) bool {
	s := c.s
	m := wire.SubmitBatch{Envelopes: envelopes}
	paid := 1
	for paid < len(m.Envelopes) && c.msgs.Allow() {
		paid++
	}
	r := queuedSubmit{req: req, envs: m.Envelopes[:paid], batch: true, shared: shared}
	if paid < len(m.Envelopes) {
		s.metrics.rateLimitedIn(bucketMessages)
		if c.refusedFrame(time.Now()) != nil {
			c.overBudget(req)
			return false
		}
		for _, env := range m.Envelopes[paid:] {
			s.metrics.refused.WithLabelValues(refuseLabel(wire.RefuseRateLimited)).Inc()
			r.limited = append(r.limited, envelopeID(env))
		}
	}
	c.queueSubmit(r)
	return true
}
