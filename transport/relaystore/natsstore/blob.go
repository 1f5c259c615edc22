package natsstore

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// Blobs is a relaystore.BlobStore on the cluster of a Store. JetStream's
// object store writes an object whole, so it cannot take an upload at
// offsets; a blob is instead one stream message per chunk as written:
//
//	KV PARLEY_BLOBMETA    id -> owner, IP, size, first charge, creation, expiry, flags
//	KV PARLEY_BLOBUSAGE   a.addr, i.ip, t -> bytes charged; n -> live blobs; h -> bytes held
//	stream PARLEY_BLOB    subjects parley.blob.<id>.<index>: chunk index (0, 1, ...),
//	                      its offset and time in the headers Parley-Offset, Parley-Time
//
// A write is committed by its chunk's publication, which expects no message
// on its subject yet: of two writers at one offset (two relays, a client
// that retried) one wins. What the store holds is the last chunk's offset
// and length, and the last chunk's time is the blob's last progress. Every
// chunk but the last has the blob's chunk size (the chunk rule), so a read
// finds the chunk holding an offset by a division: a range is a bounded
// number of requests, whatever the upload was. The charge follows what the
// blob holds and is taken, before the chunk is published, from the
// address's, the IP's and the total count in turn, each by compare-and-set
// within its limit. The relay's sweep expires blobs: a compare-and-set of
// the meta record first, so that of several relays sweeping one frees the
// charge, then a purge of the blob's subjects.
type Blobs struct {
	s      *Store
	limits relaystore.BlobLimits
	meta   jetstream.KeyValue
	usage  jetstream.KeyValue
	stream jetstream.Stream
	root   string // subject root, with the trailing dot
}

var _ relaystore.BlobStore = (*Blobs)(nil)

// Headers of a chunk message: its offset in the blob, and the time of the
// write (Unix nanoseconds, the caller's clock), the blob's last progress.
const (
	hdrOffset = "Parley-Offset"
	hdrTime   = "Parley-Time"
)

// OpenBlobs makes the blob store of s's cluster (its names under s's
// prefix), creating what is missing with replicas copies.
func OpenBlobs(ctx context.Context, s *Store, replicas int, l relaystore.BlobLimits) (*Blobs, error) {
	prefix := strings.TrimSuffix(s.names.reg, "PARLEY_REG")
	b := &Blobs{s: s, limits: l.WithDefaults(), root: prefix + "parley.blob."}
	replicas = max(replicas, 1)
	// A cluster that lost a node a moment ago may take longer than one
	// request's timeout to place new assets: try again until ctx ends, as
	// Open does.
	for {
		actx, cancel := context.WithTimeout(ctx, 4*s.timeout)
		err := b.setup(actx, prefix, replicas)
		cancel()
		if err == nil {
			return b, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (b *Blobs) setup(ctx context.Context, prefix string, replicas int) error {
	var err error
	if b.meta, err = b.s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: prefix + "PARLEY_BLOBMETA", History: 1,
		Replicas: replicas, Storage: jetstream.FileStorage}); err != nil {
		return fmt.Errorf("natsstore: blob records: %w", err)
	}
	if b.usage, err = b.s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: prefix + "PARLEY_BLOBUSAGE", History: 1,
		Replicas: replicas, Storage: jetstream.FileStorage, LimitMarkerTTL: usageMarkerTTL}); err != nil {
		return fmt.Errorf("natsstore: blob usage: %w", err)
	}
	if b.stream, err = b.s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: prefix + "PARLEY_BLOB", Subjects: []string{b.root + ">"},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: replicas,
		MaxMsgSize: wire.MaxBlobChunk + 1024}); err != nil {
		return fmt.Errorf("natsstore: blob stream: %w", err)
	}
	return nil
}

// blobMeta is a blob's record. Charge is what it was charged at creation
// (the least charge; a record from before charges followed uploads holds
// the whole size); Created is zero in such a record.
type blobMeta struct {
	Owner   string `json:"o"`
	IP      string `json:"i"`
	Size    int64  `json:"s"`
	Charge  int64  `json:"c"`
	Created int64  `json:"t,omitempty"` // Unix nanoseconds
	Expires int64  `json:"e"`           // Unix nanoseconds
	Gone    bool   `json:"g"`
	Done    bool   `json:"d,omitempty"` // seen complete by a sweep: never idle
}

func (m blobMeta) owner() relaystore.BlobOwner {
	return relaystore.BlobOwner{Address: m.Owner, IP: m.IP}
}

func idKey(id wire.BlobID) string { return hex.EncodeToString(id[:]) }

// CreateBlob implements relaystore.BlobStore.
func (b *Blobs) CreateBlob(ctx context.Context, size int64, from relaystore.BlobOwner, now, expires time.Time) (wire.BlobID, error) {
	ctx, cancel := b.s.ctx(ctx)
	defer cancel()
	if err := b.limits.CheckSize(size); err != nil {
		return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
	}
	c := b.limits.Charge(0, 0)
	if err := b.charge(ctx, from, c); err != nil {
		return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
	}
	m, _ := json.Marshal(blobMeta{Owner: from.Address, IP: from.IP, Size: size, Charge: c, Created: now.UnixNano(), Expires: expires.UnixNano()})
	for {
		id := relaystore.NewBlobID()
		_, err := b.meta.Create(ctx, idKey(id), m)
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			b.uncharge(ctx, from, c)
			return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
		}
		b.add(ctx, "n", 1, nil)
		return id, nil
	}
}

// charge takes delta bytes from the owner's address, its IP and the total,
// in turn, each within its limit (lowered to the owner's share of the
// reserve when the store reaches into it, as relaystore.BlobLimits
// says); a refusal gives back what was taken. The total is read first to
// know whether the reserve is reached: across relays this is approximate
// by the charges racing it, as the envelope quotas are.
func (b *Blobs) charge(ctx context.Context, from relaystore.BlobOwner, delta int64) error {
	if delta <= 0 {
		return nil
	}
	total, err := b.count(ctx, "t")
	if err != nil {
		return err
	}
	l := b.limits
	within := func(limit, share int64, overShare error) func(int64) error {
		return func(n int64) error {
			switch {
			case n > share:
				return overShare
			case n > limit:
				return relaystore.ErrBlobReserve
			}
			return nil
		}
	}
	type step struct {
		key   string
		check func(int64) error
	}
	steps := []step{{"a." + hexKey(from.Address), within(l.AddressLimitAt(total, delta, from), l.AddressBytes, relaystore.ErrBlobAddressQuota)}}
	if from.IP != "" {
		steps = append(steps, step{"i." + hexKey(from.IP), within(l.IPLimitAt(total, delta), l.IPBytes, relaystore.ErrBlobIPQuota)})
	}
	steps = append(steps, step{"t", within(l.TotalBytes, l.TotalBytes, relaystore.ErrBlobStoreFull)})
	for i, st := range steps {
		if err := b.add(ctx, st.key, delta, st.check); err != nil {
			for _, done := range steps[:i] {
				b.add(ctx, done.key, -delta, nil)
			}
			return err
		}
	}
	return nil
}

// uncharge gives back delta bytes of the owner's charge.
func (b *Blobs) uncharge(ctx context.Context, from relaystore.BlobOwner, delta int64) error {
	keys := []string{"a." + hexKey(from.Address), "t"}
	if from.IP != "" {
		keys = append(keys, "i."+hexKey(from.IP))
	}
	var errs []error
	for _, k := range keys {
		errs = append(errs, b.add(ctx, k, -delta, nil))
	}
	return errors.Join(errs...)
}

// add moves the count under key by delta; when check is set, a rise is
// refused with what check says of the new count.
func (b *Blobs) add(ctx context.Context, key string, delta int64, check func(int64) error) error {
	return b.s.update(ctx, b.usage, key, func(v []byte) ([]byte, error) {
		var n int64
		if len(v) == 8 {
			n = int64(binary.BigEndian.Uint64(v))
		}
		n += delta
		if delta > 0 && check != nil {
			if err := check(n); err != nil {
				return nil, err
			}
		}
		if n <= 0 {
			return nil, nil
		}
		return binary.BigEndian.AppendUint64(nil, uint64(n)), nil
	})
}

// count reads one usage count (0 when there is none).
func (b *Blobs) count(ctx context.Context, key string) (int64, error) {
	e, err := b.usage.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil || len(e.Value()) != 8 {
		return 0, errors.Join(err, errors.New("a count is not 8 bytes"))
	}
	return int64(binary.BigEndian.Uint64(e.Value())), nil
}

// record reads a blob's record and its revision.
func (b *Blobs) record(ctx context.Context, id wire.BlobID) (blobMeta, uint64, error) {
	e, err := b.meta.Get(ctx, idKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return blobMeta{}, 0, relaystore.ErrBlobNotFound
	}
	if err != nil {
		return blobMeta{}, 0, err
	}
	var m blobMeta
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return blobMeta{}, 0, fmt.Errorf("a blob's record: %w", err)
	}
	return m, e.Revision(), nil
}

// blobState is a blob's record with what the stream holds of it.
type blobState struct {
	blobMeta
	last chunk
}

func (st blobState) held() int64 { return max(st.last.end(), 0) }

// progress is when the blob was last written, or created.
func (st blobState) progress() time.Time {
	if created := time.Unix(0, st.Created); created.After(st.last.at) {
		return created
	}
	return st.last.at
}

// chunkSize is the size of every chunk but the last (0 before the first):
// chunk 0's, which the last chunk's place tells.
func (st blobState) chunkSize() int64 {
	switch {
	case st.last.index < 0:
		return 0
	case st.last.index == 0:
		return int64(len(st.last.data))
	}
	return st.last.offset / int64(st.last.index)
}

// live reads a blob's record and its last chunk, and fails when the blob
// is not live at now.
func (b *Blobs) live(ctx context.Context, id wire.BlobID, now time.Time) (blobState, error) {
	m, _, err := b.record(ctx, id)
	if err != nil {
		return blobState{}, err
	}
	l, err := b.last(ctx, id)
	if err != nil {
		return blobState{}, err
	}
	st := blobState{m, l}
	return st, b.limits.CheckBlob(time.Unix(0, m.Expires), st.progress(), st.held(), m.Size, m.Gone, now)
}

// chunk is one stored chunk: its index, offset, data and when it was
// written.
type chunk struct {
	index  int
	offset int64
	data   []byte
	at     time.Time
}

// chunkOf reads a chunk message.
func (b *Blobs) chunkOf(m *jetstream.RawStreamMsg) (chunk, error) {
	i, err1 := strconv.Atoi(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	off, err2 := strconv.ParseInt(m.Header.Get(hdrOffset), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return chunk{}, fmt.Errorf("a chunk's index or offset: %w", err)
	}
	at := m.Time // a chunk written before the header: the stream's clock
	if ns, err := strconv.ParseInt(m.Header.Get(hdrTime), 10, 64); err == nil {
		at = time.Unix(0, ns)
	}
	return chunk{index: i, offset: off, data: m.Data, at: at}, nil
}

// last reads the blob's last chunk; index -1 when it has none.
func (b *Blobs) last(ctx context.Context, id wire.BlobID) (chunk, error) {
	m, err := b.stream.GetLastMsgForSubject(ctx, b.root+idKey(id)+".*")
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return chunk{index: -1}, nil
	}
	if err != nil {
		return chunk{}, err
	}
	return b.chunkOf(m)
}

// at reads the chunk of the given index.
func (b *Blobs) at(ctx context.Context, id wire.BlobID, index int) (chunk, error) {
	m, err := b.stream.GetLastMsgForSubject(ctx, b.root+idKey(id)+"."+strconv.Itoa(index))
	if err != nil {
		return chunk{}, fmt.Errorf("chunk %d: %w", index, err)
	}
	return b.chunkOf(m)
}

func (c chunk) end() int64 { return c.offset + int64(len(c.data)) }

// BlobInfo implements relaystore.BlobStore.
func (b *Blobs) BlobInfo(ctx context.Context, id wire.BlobID, now time.Time) (relaystore.BlobInfo, error) {
	ctx, cancel := b.s.ctx(ctx)
	defer cancel()
	st, err := b.live(ctx, id, now)
	if err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("blob info: %w", err)
	}
	return relaystore.BlobInfo{Held: st.held(), Size: st.Size, Expires: time.Unix(0, st.Expires)}, nil
}

// PutBlob implements relaystore.BlobStore.
func (b *Blobs) PutBlob(ctx context.Context, id wire.BlobID, owner string, offset int64, data []byte, now time.Time) (relaystore.BlobInfo, error) {
	ctx, cancel := b.s.ctx(ctx)
	defer cancel()
	st, err := b.live(ctx, id, now)
	if err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	held := st.held()
	if _, err := b.limits.CheckPut(owner, st.Owner, offset, held, st.Size, st.chunkSize(), len(data)); err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	after := held + int64(len(data))
	delta := b.limits.Charge(st.Charge, after) - b.limits.Charge(st.Charge, held)
	if err := b.charge(ctx, st.owner(), delta); err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	msg := &nats.Msg{Subject: b.root + idKey(id) + "." + strconv.Itoa(st.last.index+1), Header: nats.Header{}, Data: data}
	msg.Header.Set(hdrOffset, strconv.FormatInt(offset, 10))
	msg.Header.Set(hdrTime, strconv.FormatInt(now.UnixNano(), 10))
	if _, err := b.s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
		b.uncharge(ctx, st.owner(), delta)
		if isConflict(err) {
			err = fmt.Errorf("%w: another write at %d came first", relaystore.ErrBlobOffset, offset)
		}
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	if err := b.add(ctx, "h", int64(len(data)), nil); err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: count it: %w", err)
	}
	return relaystore.BlobInfo{Held: after, Size: st.Size, Expires: time.Unix(0, st.Expires)}, nil
}

// PutBlobs implements relaystore.BlobStore: the record and the last chunk
// read once, the charge of every chunk taken together (one compare-and-set
// per count), the chunks published in turn, and what the store holds
// counted once. A group that a rule or the charge refuses goes a chunk at
// a time, so that the chunks before the refused one are written.
func (b *Blobs) PutBlobs(ctx context.Context, id wire.BlobID, owner string, offset int64, chunks [][]byte, now time.Time) ([]relaystore.BlobInfo, error) {
	one := func() ([]relaystore.BlobInfo, error) {
		var out []relaystore.BlobInfo
		for _, c := range chunks {
			info, err := b.PutBlob(ctx, id, owner, offset, c, now)
			if err != nil {
				return out, err
			}
			out = append(out, info)
			offset += int64(len(c))
		}
		return out, nil
	}
	if len(chunks) < 2 {
		return one()
	}
	cctx, cancel := b.s.ctx(ctx)
	defer cancel()
	st, err := b.live(cctx, id, now)
	if err != nil {
		return nil, fmt.Errorf("put blob: %w", err)
	}
	held, size := st.held(), st.chunkSize()
	at := offset
	for _, c := range chunks {
		if size, err = b.limits.CheckPut(owner, st.Owner, at, held, st.Size, size, len(c)); err != nil {
			return one()
		}
		at += int64(len(c))
		held = at
	}
	start := st.held()
	delta := b.limits.Charge(st.Charge, held) - b.limits.Charge(st.Charge, start)
	if err := b.charge(cctx, st.owner(), delta); err != nil {
		return one()
	}
	var out []relaystore.BlobInfo
	at = offset
	for i, c := range chunks {
		msg := &nats.Msg{Subject: b.root + idKey(id) + "." + strconv.Itoa(st.last.index+1+i), Header: nats.Header{}, Data: c}
		msg.Header.Set(hdrOffset, strconv.FormatInt(at, 10))
		msg.Header.Set(hdrTime, strconv.FormatInt(now.UnixNano(), 10))
		if _, err = b.s.js.PublishMsg(cctx, msg, jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
			if isConflict(err) {
				err = fmt.Errorf("%w: another write at %d came first", relaystore.ErrBlobOffset, at)
			}
			break
		}
		at += int64(len(c))
		out = append(out, relaystore.BlobInfo{Held: at, Size: st.Size, Expires: time.Unix(0, st.Expires)})
	}
	if at < held {
		// Give back the charge of what was not written.
		b.uncharge(cctx, st.owner(), delta-(b.limits.Charge(st.Charge, at)-b.limits.Charge(st.Charge, start)))
	}
	if at > offset {
		if aerr := b.add(cctx, "h", at-offset, nil); aerr != nil && err == nil {
			err = fmt.Errorf("count it: %w", aerr)
		}
	}
	if err != nil {
		return out, fmt.Errorf("put blob: %w", err)
	}
	return out, nil
}

// GetBlob implements relaystore.BlobStore: the record, the last chunk, and
// the chunks of the range, found by a division (at most five for the
// largest read of chunks of the least size).
func (b *Blobs) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int, now time.Time) ([]byte, error) {
	ctx, cancel := b.s.ctx(ctx)
	defer cancel()
	st, err := b.live(ctx, id, now)
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	if n, err = relaystore.CheckGet(offset, n, st.held(), st.Size); err != nil || n == 0 {
		return nil, err
	}
	size := st.chunkSize()
	out := make([]byte, 0, n)
	for i := int(offset / size); len(out) < n; i++ {
		c := st.last
		if i != c.index {
			if c, err = b.at(ctx, id, i); err != nil {
				return nil, fmt.Errorf("get blob: %w", err)
			}
		}
		if c.offset != int64(i)*size || offset < c.offset || offset >= c.end() {
			return nil, fmt.Errorf("get blob: chunk %d at %d of %d bytes does not hold %d (chunks of %d)", i, c.offset, len(c.data), offset, size)
		}
		p := c.data[offset-c.offset:]
		p = p[:min(len(p), n-len(out))]
		out = append(out, p...)
		offset += int64(len(p))
	}
	return out, nil
}

// ExpireBlobs implements relaystore.BlobStore. It reads every record: the
// quotas allow few live blobs (at most TotalBytes/MinCharge), and an
// incomplete one past its idle lifetime costs a read of its last chunk too
// (a complete one is marked so at its first sweep, and not read again).
func (b *Blobs) ExpireBlobs(ctx context.Context, now, forget time.Time, max int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*b.s.timeout)
	defer cancel()
	keys, err := b.meta.ListKeys(ctx)
	if err != nil {
		return 0, fmt.Errorf("expire blobs: %w", err)
	}
	var ids []wire.BlobID
	for k := range keys.Keys() {
		var id wire.BlobID
		if raw, err := hex.DecodeString(k); err == nil && len(raw) == len(id) {
			copy(id[:], raw)
			ids = append(ids, id)
		}
	}
	n := 0
	for _, id := range ids {
		m, rev, err := b.record(ctx, id)
		if errors.Is(err, relaystore.ErrBlobNotFound) {
			continue
		} else if err != nil {
			return n, fmt.Errorf("expire blobs: %w", err)
		}
		expires := time.Unix(0, m.Expires)
		switch {
		case m.Gone && expires.Before(forget):
			if err := b.purge(ctx, id); err != nil {
				return n, err
			}
			if err := b.meta.Purge(ctx, idKey(id), jetstream.LastRevision(rev)); err != nil && !isConflict(err) {
				return n, fmt.Errorf("expire blobs: forget one: %w", err)
			}
		case m.Gone || n >= max:
		case !now.Before(expires) || !m.Done && !now.Before(time.Unix(0, m.Created).Add(b.limits.IdleLifetime)):
			ok, err := b.expire(ctx, id, m, rev, now)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
	}
	return n, nil
}

// expire deletes one blob when it is no longer live at now (its record, by
// compare-and-set, so that one sweeper alone frees its charge, then its
// chunks), or marks it complete; it reports whether it deleted it.
func (b *Blobs) expire(ctx context.Context, id wire.BlobID, m blobMeta, rev uint64, now time.Time) (bool, error) {
	l, err := b.last(ctx, id)
	if err != nil {
		return false, fmt.Errorf("expire a blob: %w", err)
	}
	st := blobState{m, l}
	if b.limits.CheckBlob(time.Unix(0, m.Expires), st.progress(), st.held(), m.Size, false, now) == nil {
		if st.held() == m.Size {
			done := m
			done.Done = true
			v, _ := json.Marshal(done)
			b.meta.Update(ctx, idKey(id), v, rev) // a conflict: another sweep, or a later one will
		}
		return false, nil
	}
	gone := m
	gone.Gone = true
	v, _ := json.Marshal(gone)
	if _, err := b.meta.Update(ctx, idKey(id), v, rev); err != nil {
		if isConflict(err) {
			return false, nil // another relay's sweep
		}
		return false, fmt.Errorf("expire a blob: %w", err)
	}
	errs := []error{b.uncharge(ctx, m.owner(), b.limits.Charge(m.Charge, st.held())), b.add(ctx, "n", -1, nil), b.add(ctx, "h", -st.held(), nil)}
	if err := errors.Join(errs...); err != nil {
		return true, fmt.Errorf("expire a blob: %w", err)
	}
	return true, b.purge(ctx, id)
}

// purge deletes every chunk of a blob.
func (b *Blobs) purge(ctx context.Context, id wire.BlobID) error {
	if err := b.stream.Purge(ctx, jetstream.WithPurgeSubject(b.root+idKey(id)+".*")); err != nil {
		return fmt.Errorf("delete a blob's chunks: %w", err)
	}
	return nil
}

// BlobStats implements relaystore.BlobStore from the usage counts.
func (b *Blobs) BlobStats(ctx context.Context) (relaystore.BlobStats, error) {
	ctx, cancel := b.s.ctx(ctx)
	defer cancel()
	n, err1 := b.count(ctx, "n")
	t, err2 := b.count(ctx, "t")
	h, err3 := b.count(ctx, "h")
	if err := errors.Join(err1, err2, err3); err != nil {
		return relaystore.BlobStats{}, fmt.Errorf("blob stats: %w", err)
	}
	return relaystore.BlobStats{Blobs: int(n), Charged: t, Held: h}, nil
}
