package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parley-chat/parley/transport/relaystore"
)

// maxLeaseBatch bounds the rows one lease reads: a connection's window.
const maxLeaseBatch = 256

// Lease implements relaystore.Store: the mailbox's messages in stream order,
// skipping those this process has leased, read from the recipient's cursor
// (relaystore.Leases.Begin) without holding the lease table's lock: one
// batch direct get (directget.go), and when a replica that lags answered
// short of a row this relay knows of, the rest from the stream's leader.
func (s *Store) Lease(ctx context.Context, recipient, holder string, max int, now, until time.Time) ([]relaystore.Row, error) {
	if max <= 0 {
		return nil, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	sh := s.shardOf(recipient)
	subj := sh.root + hexKey(recipient)
	held, after, gen := s.leases.Begin(recipient, now)
	batch := min(max+len(held), maxLeaseBatch)
	msgs, err := s.direct.batch(ctx, sh.name, subj, after+1, batch)
	if err != nil {
		return nil, fmt.Errorf("lease from %s: %w", recipient, err)
	}
	last := after
	if len(msgs) > 0 {
		last = msgs[len(msgs)-1].seq
	}
	if tail := s.tails.get(recipient); len(msgs) < batch && tail > last {
		for seq := last + 1; len(msgs) < batch; {
			m, ok, err := s.leaderGet(ctx, sh.name, subj, seq)
			if err != nil {
				return nil, fmt.Errorf("lease from %s: %w", recipient, err)
			}
			if !ok {
				break
			}
			msgs = append(msgs, m)
			seq = m.seq + 1
		}
	}
	var rows []relaystore.Row
	var cands []relaystore.Candidate
	readTo := after
	payloads := map[string][]byte{} // the shared payloads read so far
	for _, m := range msgs {
		if len(rows) == max {
			break
		}
		readTo = m.seq
		if _, ok := held[m.seq]; ok {
			continue
		}
		size, _, ref := stored(m.header, m.data)
		env := m.data
		if ref != "" {
			p, ok := payloads[ref]
			if !ok {
				if p, err = s.fetchPayload(ctx, ref); errors.Is(err, ErrPayloadMissing) {
					s.dropOrphan(ctx, recipient, m, size, ref)
					continue
				} else if err != nil {
					return nil, fmt.Errorf("lease from %s: %w", recipient, err)
				}
				payloads[ref] = p
			}
			env = append(append(make([]byte, 0, size), m.data...), p...)
		}
		rows = append(rows, relaystore.Row{ID: m.seq, Envelope: env, Accepted: m.at})
		cands = append(cands, relaystore.Candidate{Row: m.seq, From: origin(m.header), Size: size, Shared: ref})
	}
	claimed := s.leases.Claim(recipient, holder, now, until, cands, gen, readTo)
	if len(claimed) == len(rows) {
		return rows, nil
	}
	// Another connection of the recipient claimed some meanwhile.
	ok := make(map[uint64]bool, len(claimed))
	for _, c := range claimed {
		ok[c.Row] = true
	}
	out := rows[:0]
	for _, r := range rows {
		if ok[r.ID] {
			out = append(out, r)
		}
	}
	return out, nil
}

// dropOrphan deletes m, a head of recipient's mailbox whose shared payload
// is missing (its append died before it answered, payload.go), and frees
// what it was charged, as an acknowledgement would: it can never be
// delivered.
func (s *Store) dropOrphan(ctx context.Context, recipient string, m directMsg, size int, ref string) {
	if err := s.shardOf(recipient).stream.DeleteMsg(ctx, m.seq); err != nil {
		return // deleted meanwhile
	}
	from := origin(m.header)
	s.forgetHead(ctx, recipient, m.seq, relaystore.Lease{From: from, Size: size, Shared: ref})
	held := map[string]relaystore.Usage{}
	for _, k := range usageKeys(recipient, from) {
		held[k] = relaystore.Usage{Envelopes: 1, Bytes: int64(size)}
	}
	s.freeQuotas(ctx, held) // best effort: a failure leaves the counts high, as a failed Ack does
}

// storedMsg is a message as the stream's leader returns it
// ($JS.API.STREAM.MSG.GET).
type storedMsg struct {
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs"`
		Data    []byte    `json:"data"`
		Time    time.Time `json:"time"`
	} `json:"message"`
	Error *struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
}

// leaderGet reads the first message of subject at or after seq from the
// stream's leader, which has every message it acknowledged; false when
// there is none.
func (s *Store) leaderGet(ctx context.Context, stream, subject string, seq uint64) (directMsg, bool, error) {
	req, err := json.Marshal(directGetRequest{Seq: seq, NextFor: subject})
	if err != nil {
		return directMsg{}, false, err
	}
	resp, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return directMsg{}, false, err
	}
	var sm storedMsg
	if err := json.Unmarshal(resp.Data, &sm); err != nil {
		return directMsg{}, false, err
	}
	switch {
	case sm.Error != nil && sm.Error.Code == 404:
		return directMsg{}, false, nil
	case sm.Error != nil:
		return directMsg{}, false, fmt.Errorf("get from %s: %d %s", stream, sm.Error.Code, sm.Error.Description)
	case sm.Message == nil:
		return directMsg{}, false, fmt.Errorf("get from %s: no message in the reply", stream)
	}
	m := directMsg{seq: sm.Message.Seq, at: sm.Message.Time, data: sm.Message.Data, header: nats.Header{}}
	if len(sm.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(sm.Message.Header)
		if err != nil {
			return directMsg{}, false, fmt.Errorf("get from %s: %w", stream, err)
		}
		m.header = h
	}
	return m, true, nil
}

// maxTails bounds the mailboxes whose newest row is remembered; past it
// they are forgotten, which costs at most a lease that waits for the next
// wake-up or tick.
const maxTails = 100000

// tails remembers, per mailbox, the newest row this relay knows exists:
// one it appended, or one another relay's wake-up named. A lease that a
// lagging replica answered short of it reads the rest from the leader, and
// a wake-up for mail names it to the other relays.
type tails struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (t *tails) note(recipient string, row uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTails {
		t.m = make(map[string]uint64)
	}
	if row > t.m[recipient] {
		t.m[recipient] = row
	}
}

func (t *tails) get(recipient string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[recipient]
}
