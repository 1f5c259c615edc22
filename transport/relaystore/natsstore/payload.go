package natsstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/wire"
)

// A payload that several mailboxes share (relaystore.AppendItem.Shared, a
// SubmitMulti's) is kept once, in the payload stream, and each mailbox's
// message holds only the envelope's head and, in hdrPayload, which
// payload follows it. A record in the payload-record stream, one subject
// per payload ID, says which heads still point at the payload; the last
// head to go (acknowledged or expired, through any relay) deletes the
// payload and the record.
//
// JetStream writes one message at a time, so every step is ordered for a
// relay that dies between any two:
//
//  1. The appending relay creates the record, pending (no head yet).
//  2. It publishes the payload, and only once that is stored the heads.
//  3. It makes the record live with the rows of the heads that were
//     stored (less those already gone), with compare-and-set; only then
//     are the items answered. With no row left it disposes of both.
//
// A head that leaves its mailbox takes its row off a live record, or adds
// it to a pending record's rows gone (step 3 leaves those out), with
// compare-and-set; the write that empties a live record is followed by the
// payload's purge and then the record's deletion (dispose). So a payload
// never exists without its record, and every crash leaves a record that
// the sweep (sweepPayloads, part of Expire) settles:
//
//   - pending and unwritten for payloadGrace (longer than any append
//     takes): the append died or gave up; the payload and record go. Heads
//     it had stored are orphans that no client was told were accepted:
//     a lease that finds a head without its payload deletes it, freeing
//     its quotas as an acknowledgement would.
//   - live, emptied and unwritten for payloadGrace: a dispose cut short.
//   - live with the payload older than Expire's bound: every head should
//     have expired, so each listed row is looked up and the missing ones
//     (a relay died between a head's deletion and the record's write) are
//     taken off.
//
// Quotas are charged each head's whole envelope, as for an envelope of its
// own (relaystore.Limits): a head's hdrPayload carries the payload's size.

// hdrPayload, on a mailbox message that holds a head, is the shared
// payload that follows it: its ID (hex) and its size, "id/size".
const hdrPayload = "Parley-Payload"

// payloadGrace is how long a record may stay pending, or live and empty,
// before the sweep settles it: far longer than an append (bounded by the
// store's timeout) or a dispose takes.
const payloadGrace = 2 * time.Minute

// sweepBudget bounds the reads one sweep of the records makes.
const sweepBudget = 256

// ErrPayloadMissing means a head's shared payload is not in the payload
// stream: its append died before it finished, and the head is an orphan.
var ErrPayloadMissing = errors.New("shared payload missing")

// errBadRecord means a payload record does not decode.
var errBadRecord = errors.New("bad payload record")

// setupPayloads creates or updates the payload stream and the records'.
func (s *Store) setupPayloads(ctx context.Context, replicas int) error {
	var err error
	if s.payloads, err = s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: s.names.payStream,
		Subjects: []string{s.names.pay + "*"}, Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
		Replicas: replicas, MaxMsgsPerSubject: 1, MaxMsgSize: int32(maxPayload)}); err != nil {
		return err
	}
	// The records are a stream, one subject each, rather than a bucket: a
	// bucket's stream denies the deletion of a message, and a purge leaves
	// a marker. Compare-and-set is the publish's expected last sequence of
	// the subject; the revision is the message's sequence.
	s.payrefs, err = s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: s.names.payRef,
		Subjects: []string{s.names.payrefRoot + "*"}, Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
		Replicas: replicas, MaxMsgsPerSubject: 1})
	return err
}

// getRecord reads the record of id and its revision; found is false when
// there is none.
func (s *Store) getRecord(ctx context.Context, id string) (rec payloadRecord, rev uint64, found bool, err error) {
	m, err := s.payrefs.GetLastMsgForSubject(ctx, s.names.payrefRoot+id)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return payloadRecord{}, 0, false, nil
	} else if err != nil {
		return payloadRecord{}, 0, false, err
	}
	rec, err = decodePayloadRecord(m.Data)
	if err != nil {
		return payloadRecord{}, m.Sequence, true, fmt.Errorf("record of payload %s: %w", id, err)
	}
	return rec, m.Sequence, true, nil
}

// putRecord writes the record of id over revision rev (0: a record that
// must not exist yet) and returns its new revision; a record written
// meanwhile fails it with a conflict (isConflict).
func (s *Store) putRecord(ctx context.Context, id string, rec payloadRecord, rev uint64) (uint64, error) {
	ack, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: s.names.payrefRoot + id, Data: rec.encode()},
		jetstream.WithExpectLastSequencePerSubject(rev))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// maxPayload bounds a shared payload as the mailbox streams bound a
// message.
const maxPayload = wire.MaxEnvelopeSize + 1024

// rowRef is a head's row: its mailbox shard and its sequence there.
type rowRef struct {
	shard uint16
	row   uint64
}

// payloadRecord is what the records' stream holds of one payload.
//
// Encoding: 'p' (pending) or 'l' (live), the creation time (int64 Unix
// nanoseconds), the payload's size (uint32), then per row its shard
// (uint16) and its sequence (uint64), all big-endian.
type payloadRecord struct {
	live    bool
	created int64
	size    uint32
	// rows: live, the heads that point at the payload; pending, the heads
	// that already left their mailbox.
	rows []rowRef
}

const payRecordHead = 1 + 8 + 4

func (r payloadRecord) encode() []byte {
	b := make([]byte, 0, payRecordHead+10*len(r.rows))
	state := byte('p')
	if r.live {
		state = 'l'
	}
	b = append(b, state)
	b = binary.BigEndian.AppendUint64(b, uint64(r.created))
	b = binary.BigEndian.AppendUint32(b, r.size)
	for _, x := range r.rows {
		b = binary.BigEndian.AppendUint16(b, x.shard)
		b = binary.BigEndian.AppendUint64(b, x.row)
	}
	return b
}

func decodePayloadRecord(b []byte) (payloadRecord, error) {
	if len(b) < payRecordHead || (len(b)-payRecordHead)%10 != 0 || (b[0] != 'p' && b[0] != 'l') {
		return payloadRecord{}, errBadRecord
	}
	r := payloadRecord{live: b[0] == 'l', created: int64(binary.BigEndian.Uint64(b[1:])), size: binary.BigEndian.Uint32(b[9:])}
	for rest := b[payRecordHead:]; len(rest) > 0; rest = rest[10:] {
		r.rows = append(r.rows, rowRef{shard: binary.BigEndian.Uint16(rest), row: binary.BigEndian.Uint64(rest[2:])})
	}
	return r, nil
}

// payloadRef is what hdrPayload says: the payload's ID and size.
func payloadRef(id string, size int) string { return id + "/" + strconv.Itoa(size) }

// parsePayloadRef reads hdrPayload; ok is false for a message that holds
// a whole envelope (or a header it cannot read, which is treated so).
func parsePayloadRef(v string) (id string, size int, ok bool) {
	id, n, found := strings.Cut(v, "/")
	if !found || len(id) != 32 {
		return "", 0, false
	}
	size, err := strconv.Atoi(n)
	if err != nil || size < 0 || size > maxPayload {
		return "", 0, false
	}
	return id, size, true
}

// stored is what a mailbox message charges (its whole envelope), what it
// keeps (its data), and the shared payload its head points at ("" for a
// whole envelope).
func stored(h nats.Header, data []byte) (charged, kept int, shared string) {
	if v := h.Get(hdrPayload); v != "" {
		if _, size, ok := parsePayloadRef(v); ok {
			return len(data) + size, len(data), v
		}
	}
	return len(data), len(data), ""
}

// shared is a payload an AppendBatch keeps once: its record and the rows
// of the heads stored so far.
type shared struct {
	id   string
	size int
	rev  uint64 // the pending record's revision
	err  error  // the payload could not be stored: its items fail
	rows []rowRef
}

// preparePayload creates the pending record of p and stores p (steps 1
// and 2).
func (s *Store) preparePayload(ctx context.Context, p []byte) *shared {
	var raw [16]byte
	rand.Read(raw[:])
	sp := &shared{id: hex.EncodeToString(raw[:]), size: len(p)}
	rec := payloadRecord{created: time.Now().UnixNano(), size: uint32(len(p))}
	rev, err := s.putRecord(ctx, sp.id, rec, 0)
	if err != nil {
		sp.err = fmt.Errorf("keep a shared payload: %w", err)
		return sp
	}
	sp.rev = rev
	if _, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: s.names.pay + sp.id, Data: p}); err != nil {
		sp.err = fmt.Errorf("keep a shared payload: %w", err)
		s.dispose(ctx, sp.id, rev, 0) // or the sweep, after payloadGrace
		return sp
	}
	s.noteKept(int64(len(p)))
	return sp
}

// errRecordGone means a pending record was settled by the sweep before
// its append finished.
var errRecordGone = errors.New("the shared payload's record was swept before its append finished")

// finishPayload makes sp's record live with the rows of its heads that
// were stored and have not left yet (step 3), and disposes of the payload
// when none is left. It fails when the record is no longer sp's pending
// one: the heads then point at a payload the sweep took.
func (s *Store) finishPayload(ctx context.Context, sp *shared) error {
	rec, rev, found, err := s.editRecord(ctx, sp.id, func(r *payloadRecord) (bool, error) {
		if r.live {
			return false, errRecordGone
		}
		rows := make([]rowRef, 0, len(sp.rows))
		for _, x := range sp.rows {
			if !slices.Contains(r.rows, x) {
				rows = append(rows, x)
			}
		}
		r.live, r.rows = true, rows
		return true, nil
	})
	switch {
	case err != nil:
		return err
	case !found:
		return errRecordGone
	case len(rec.rows) == 0:
		s.dispose(ctx, sp.id, rev, int64(rec.size))
	}
	return nil
}

// unref takes the head at x, which left its mailbox, off the record of
// the payload named by ref (hdrPayload), and disposes of the payload when
// it was the last. A failure leaves the row listed, for the sweep.
func (s *Store) unref(ctx context.Context, ref string, x rowRef) {
	id, _, ok := parsePayloadRef(ref)
	if !ok {
		return
	}
	rec, rev, found, err := s.editRecord(ctx, id, func(r *payloadRecord) (bool, error) {
		i := slices.Index(r.rows, x)
		switch {
		case r.live && i < 0:
			return false, nil // taken off already (the sweep)
		case r.live:
			r.rows = slices.Delete(r.rows, i, i+1)
		case i >= 0:
			return false, nil
		default:
			r.rows = append(r.rows, x)
		}
		return true, nil
	})
	if err == nil && found && rec.live && len(rec.rows) == 0 {
		s.dispose(ctx, id, rev, int64(rec.size))
	}
}

// editRecord applies fn to the record of id with compare-and-set, reading
// again after a conflict, and returns the record as written (or as read,
// when fn changed nothing) with its revision; found is false when there
// is no record.
func (s *Store) editRecord(ctx context.Context, id string, fn func(*payloadRecord) (bool, error)) (payloadRecord, uint64, bool, error) {
	for attempt := 0; ; attempt++ {
		rec, rev, found, err := s.getRecord(ctx, id)
		if err != nil || !found {
			return rec, rev, found, err
		}
		changed, err := fn(&rec)
		if err != nil || !changed {
			return rec, rev, true, err
		}
		rev, err = s.putRecord(ctx, id, rec, rev)
		if err == nil {
			return rec, rev, true, nil
		}
		if !isConflict(err) {
			return payloadRecord{}, 0, true, err
		}
		wait := time.Duration(mrand.Int64N(int64(min(attempt+1, 20)) * int64(time.Millisecond)))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return payloadRecord{}, 0, true, fmt.Errorf("%w (after %d conflicts)", ctx.Err(), attempt+1)
		}
	}
}

// dispose purges the payload id and then deletes its record at rev (a
// deletion that finds a newer revision deletes nothing: the stream keeps
// one per subject). Failures are left to the sweep. size is what the payload
// kept, for the cached figures (0: not counted here).
func (s *Store) dispose(ctx context.Context, id string, rev uint64, size int64) {
	s.recent.forget(id)
	if err := s.payloads.Purge(ctx, jetstream.WithPurgeSubject(s.names.pay+id)); err != nil {
		return
	}
	s.noteKept(-size)
	s.payrefs.DeleteMsg(ctx, rev)
}

// fetchPayload returns the payload named by ref, from this relay's cache
// or else read from the stream's leader (which has every payload it
// acknowledged), or fails with ErrPayloadMissing.
func (s *Store) fetchPayload(ctx context.Context, ref string) ([]byte, error) {
	id, size, ok := parsePayloadRef(ref)
	if !ok {
		return nil, fmt.Errorf("payload %q: %w", ref, ErrPayloadMissing)
	}
	if p, ok := s.recent.get(id); ok {
		return p, nil
	}
	m, err := s.payloads.GetLastMsgForSubject(ctx, s.names.pay+id)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("payload %s: %w", id, ErrPayloadMissing)
	} else if err != nil {
		return nil, fmt.Errorf("payload %s: %w", id, err)
	}
	if len(m.Data) != size {
		return nil, fmt.Errorf("payload %s of %d bytes, its heads say %d: %w", id, len(m.Data), size, ErrPayloadMissing)
	}
	s.recent.put(id, m.Data)
	return m.Data, nil
}

// recentBytes bounds the payloads a relay keeps in memory (recentPayloads).
const recentBytes = 8 << 20

// recentPayloads keeps the payloads this relay read last, so that the
// leases of a group's members through one relay read a payload once: a
// payload never changes under its ID. The oldest go first, and one this
// relay disposes of at once. A head whose payload another relay's sweep
// took (an orphan, see above) may be delivered from here rather than
// dropped, which is harmless: it is an envelope its sender made, answered
// with an error, that the recipient may then receive twice.
type recentPayloads struct {
	mu    sync.Mutex
	m     map[string][]byte
	order []string
	bytes int
}

func (r *recentPayloads) get(id string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.m[id]
	return p, ok
}

func (r *recentPayloads) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.m[id]; ok {
		delete(r.m, id)
		r.bytes -= len(p)
		r.order = slices.DeleteFunc(r.order, func(x string) bool { return x == id })
	}
}

func (r *recentPayloads) put(id string, p []byte) {
	if len(p) > recentBytes/4 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string][]byte)
	}
	if _, ok := r.m[id]; ok {
		return
	}
	for r.bytes+len(p) > recentBytes && len(r.order) > 0 {
		r.bytes -= len(r.m[r.order[0]])
		delete(r.m, r.order[0])
		r.order = r.order[1:]
	}
	r.m[id] = p
	r.order = append(r.order, id)
	r.bytes += len(p)
}

// sweepPayloads settles the records a relay that died left (see the top
// of this file), those unwritten since before now less payloadGrace, from
// the oldest write on and within sweepBudget reads; before is Expire's.
// A cursor carries a long sweep over to the next call.
func (s *Store) sweepPayloads(ctx context.Context, now, before time.Time) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	info, err := s.payrefs.Info(ctx)
	if err != nil {
		return err
	}
	s.sweepMu.Lock()
	seq := max(s.sweepAt, info.State.FirstSeq)
	s.sweepMu.Unlock()
	root := s.names.payrefRoot
	for reads := 0; reads < sweepBudget; reads++ {
		m, err := s.payrefs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(root+"*"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			seq = 0 // the end: from the first next time
			break
		} else if err != nil {
			return err
		}
		if !m.Time.Before(now.Add(-payloadGrace)) {
			seq = 0 // every later record was written since
			break
		}
		seq = m.Sequence + 1
		id := strings.TrimPrefix(m.Subject, root)
		rec, err := decodePayloadRecord(m.Data)
		if err != nil {
			continue // not ours to judge
		}
		switch {
		case !rec.live:
			// Claimed first, with compare-and-set: an append that is only
			// slow then fails to finish (errRecordGone) rather than answer
			// for heads whose payload goes.
			rev, err := s.putRecord(ctx, id, payloadRecord{live: true, created: rec.created, size: rec.size}, m.Sequence)
			if err == nil {
				s.dispose(ctx, id, rev, 0)
			}
		case len(rec.rows) == 0:
			s.dispose(ctx, id, m.Sequence, 0)
		case time.Unix(0, rec.created).Before(before):
			var gone []rowRef
			for _, x := range rec.rows {
				reads++
				if int(x.shard) >= len(s.shards) {
					gone = append(gone, x)
					continue
				}
				// From the leader: a replica that lags may not have the
				// row yet, and a head wrongly taken off loses its payload.
				if has, err := s.leaderHas(ctx, s.shards[x.shard].name, x.row); err != nil {
					return err
				} else if !has {
					gone = append(gone, x)
				}
			}
			if len(gone) == 0 {
				continue
			}
			rec.rows = slices.DeleteFunc(rec.rows, func(x rowRef) bool { return slices.Contains(gone, x) })
			rev, err := s.putRecord(ctx, id, rec, m.Sequence)
			if err != nil {
				continue // written meanwhile: its writer settles it
			}
			if len(rec.rows) == 0 {
				s.dispose(ctx, id, rev, 0)
			}
		}
	}
	s.sweepMu.Lock()
	s.sweepAt = seq
	s.sweepMu.Unlock()
	return nil
}

// leaderHas reports whether the stream's leader holds the message at seq.
func (s *Store) leaderHas(ctx context.Context, stream string, seq uint64) (bool, error) {
	req, err := json.Marshal(struct {
		Seq uint64 `json:"seq"`
	}{seq})
	if err != nil {
		return false, err
	}
	resp, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return false, err
	}
	var sm storedMsg
	if err := json.Unmarshal(resp.Data, &sm); err != nil {
		return false, err
	}
	switch {
	case sm.Error != nil && sm.Error.Code == 404:
		return false, nil
	case sm.Error != nil:
		return false, fmt.Errorf("get from %s: %d %s", stream, sm.Error.Code, sm.Error.Description)
	}
	return sm.Message != nil && sm.Message.Seq == seq, nil
}
