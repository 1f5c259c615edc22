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
//	KV PARLEY_BLOBMETA    id -> owner, IP, size, charge, expiry, expired flag
//	KV PARLEY_BLOBUSAGE   a.addr, i.ip, t -> bytes charged; n -> live blobs; h -> bytes held
//	stream PARLEY_BLOB    subjects parley.blob.<id>.<index>: chunk index (0, 1, ...),
//	                      its offset in the header Parley-Offset
//
// A write is committed by its chunk's publication, which expects no message
// on its subject yet: of two writers at one offset (two relays, a client
// that retried) one wins. What the store holds is the last chunk's offset
// and length. The relay's sweep expires blobs: a compare-and-set of the
// meta record first, so that of several relays sweeping one frees the
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

const hdrOffset = "Parley-Offset"

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

// blobMeta is a blob's record.
type blobMeta struct {
	Owner   string `json:"o"`
	IP      string `json:"i"`
	Size    int64  `json:"s"`
	Charge  int64  `json:"c"`
	Expires int64  `json:"e"` // Unix nanoseconds
	Gone    bool   `json:"g"`
}

func idKey(id wire.BlobID) string { return hex.EncodeToString(id[:]) }

// CreateBlob implements relaystore.BlobStore. The charge is taken from the
// address's, the IP's and the total count in turn, each by compare-and-set
// within its limit; a refusal gives back what was taken.
func (b *Blobs) CreateBlob(ctx context.Context, size int64, from relaystore.BlobOwner, expires time.Time) (wire.BlobID, error) {
	ctx, cancel := b.s.ctx(ctx)
	defer cancel()
	if size < 1 || size > b.limits.MaxSize {
		return wire.BlobID{}, fmt.Errorf("create blob: %w: %d bytes, the largest is %d", relaystore.ErrBlobTooLarge, size, b.limits.MaxSize)
	}
	c := b.limits.Charge(size)
	steps := []struct {
		key   string
		limit int64
		err   error
	}{{"a." + hexKey(from.Address), b.limits.AddressBytes, relaystore.ErrBlobAddressQuota}}
	if from.IP != "" {
		steps = append(steps, struct {
			key   string
			limit int64
			err   error
		}{"i." + hexKey(from.IP), b.limits.IPBytes, relaystore.ErrBlobIPQuota})
	}
	steps = append(steps, struct {
		key   string
		limit int64
		err   error
	}{"t", b.limits.TotalBytes, relaystore.ErrBlobStoreFull})
	for i, st := range steps {
		if err := b.add(ctx, st.key, c, st.limit, st.err); err != nil {
			for _, done := range steps[:i] {
				b.add(ctx, done.key, -c, 0, nil)
			}
			return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
		}
	}
	m, _ := json.Marshal(blobMeta{Owner: from.Address, IP: from.IP, Size: size, Charge: c, Expires: expires.UnixNano()})
	for {
		id := relaystore.NewBlobID()
		_, err := b.meta.Create(ctx, idKey(id), m)
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			b.uncharge(ctx, blobMeta{Owner: from.Address, IP: from.IP, Charge: c}, 0, false)
			return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
		}
		b.add(ctx, "n", 1, 0, nil)
		return id, nil
	}
}

// add moves the count under key by delta, refusing with over when it would
// pass limit (0: no limit).
func (b *Blobs) add(ctx context.Context, key string, delta, limit int64, over error) error {
	return b.s.update(ctx, b.usage, key, func(v []byte) ([]byte, error) {
		var n int64
		if len(v) == 8 {
			n = int64(binary.BigEndian.Uint64(v))
		}
		n += delta
		switch {
		case delta > 0 && limit > 0 && n > limit:
			return nil, over
		case n <= 0:
			return nil, nil
		}
		return binary.BigEndian.AppendUint64(nil, uint64(n)), nil
	})
}

// uncharge gives back a blob's charge and, when counted, its place among
// the live blobs and the bytes it held.
func (b *Blobs) uncharge(ctx context.Context, m blobMeta, held int64, counted bool) error {
	keys := []string{"a." + hexKey(m.Owner), "t"}
	if m.IP != "" {
		keys = append(keys, "i."+hexKey(m.IP))
	}
	var errs []error
	for _, k := range keys {
		errs = append(errs, b.add(ctx, k, -m.Charge, 0, nil))
	}
	if counted {
		errs = append(errs, b.add(ctx, "n", -1, 0, nil), b.add(ctx, "h", -held, 0, nil))
	}
	return errors.Join(errs...)
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

// live reads the record of a blob that has not expired at now.
func (b *Blobs) live(ctx context.Context, id wire.BlobID, now time.Time) (blobMeta, error) {
	m, _, err := b.record(ctx, id)
	if err != nil {
		return m, err
	}
	return m, relaystore.CheckBlob(time.Unix(0, m.Expires), m.Gone, now)
}

// chunk is one stored chunk: its index, offset and data.
type chunk struct {
	index  int
	offset int64
	data   []byte
}

// chunkOf reads a chunk message.
func (b *Blobs) chunkOf(m *jetstream.RawStreamMsg) (chunk, error) {
	i, err1 := strconv.Atoi(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	off, err2 := strconv.ParseInt(m.Header.Get(hdrOffset), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return chunk{}, fmt.Errorf("a chunk's index or offset: %w", err)
	}
	return chunk{index: i, offset: off, data: m.Data}, nil
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
	m, err := b.live(ctx, id, now)
	if err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("blob info: %w", err)
	}
	l, err := b.last(ctx, id)
	if err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("blob info: %w", err)
	}
	return relaystore.BlobInfo{Held: max(l.end(), 0), Size: m.Size, Expires: time.Unix(0, m.Expires)}, nil
}

// PutBlob implements relaystore.BlobStore.
func (b *Blobs) PutBlob(ctx context.Context, id wire.BlobID, owner string, offset int64, data []byte, now time.Time) (relaystore.BlobInfo, error) {
	ctx, cancel := b.s.ctx(ctx)
	defer cancel()
	m, err := b.live(ctx, id, now)
	if err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	l, err := b.last(ctx, id)
	if err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	held := max(l.end(), 0)
	if err := relaystore.CheckPut(owner, m.Owner, offset, held, m.Size, len(data)); err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	msg := &nats.Msg{Subject: b.root + idKey(id) + "." + strconv.Itoa(l.index+1), Header: nats.Header{}, Data: data}
	msg.Header.Set(hdrOffset, strconv.FormatInt(offset, 10))
	if _, err := b.s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
		if isConflict(err) {
			err = fmt.Errorf("%w: another write at %d came first", relaystore.ErrBlobOffset, offset)
		}
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	if err := b.add(ctx, "h", int64(len(data)), 0, nil); err != nil {
		return relaystore.BlobInfo{}, fmt.Errorf("put blob: count it: %w", err)
	}
	return relaystore.BlobInfo{Held: held + int64(len(data)), Size: m.Size, Expires: time.Unix(0, m.Expires)}, nil
}

// GetBlob implements relaystore.BlobStore. The chunk holding offset is
// guessed from the first chunk's length (clients write chunks of one size),
// and searched for by halves otherwise.
func (b *Blobs) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int, now time.Time) ([]byte, error) {
	ctx, cancel := b.s.ctx(ctx)
	defer cancel()
	m, err := b.live(ctx, id, now)
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	l, err := b.last(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	if n, err = relaystore.CheckGet(offset, n, max(l.end(), 0), m.Size); err != nil || n == 0 {
		return nil, err
	}
	c, err := b.find(ctx, id, offset, l)
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	out := make([]byte, 0, n)
	for {
		p := c.data[offset-c.offset:]
		p = p[:min(len(p), n-len(out))]
		out = append(out, p...)
		offset += int64(len(p))
		if len(out) == n {
			return out, nil
		}
		if c, err = b.at(ctx, id, c.index+1); err != nil {
			return nil, fmt.Errorf("get blob: %w", err)
		}
	}
}

// find returns the chunk holding offset, which lies before last's end.
func (b *Blobs) find(ctx context.Context, id wire.BlobID, offset int64, last chunk) (chunk, error) {
	if offset >= last.offset {
		return last, nil
	}
	first, err := b.at(ctx, id, 0)
	if err != nil || offset < first.end() {
		return first, err
	}
	lo, hi := 1, last.index-1 // the chunk lies within
	if guess := int(offset / int64(len(first.data))); guess >= lo && guess <= hi {
		c, err := b.at(ctx, id, guess)
		if err != nil || (c.offset <= offset && offset < c.end()) {
			return c, err
		}
		if offset < c.offset {
			hi = guess - 1
		} else {
			lo = guess + 1
		}
	}
	for lo <= hi {
		mid := (lo + hi) / 2
		c, err := b.at(ctx, id, mid)
		switch {
		case err != nil:
			return c, err
		case offset < c.offset:
			hi = mid - 1
		case offset >= c.end():
			lo = mid + 1
		default:
			return c, nil
		}
	}
	return chunk{}, fmt.Errorf("no chunk holds offset %d", offset)
}

// ExpireBlobs implements relaystore.BlobStore. It reads every record: the
// quotas allow few live blobs (at most TotalBytes/MinCharge).
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
		case !m.Gone && n < max && !now.Before(expires):
			ok, err := b.expire(ctx, id, m, rev)
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

// expire marks one blob expired, by compare-and-set so that one sweeper
// alone frees its charge, and deletes its chunks.
func (b *Blobs) expire(ctx context.Context, id wire.BlobID, m blobMeta, rev uint64) (bool, error) {
	l, err := b.last(ctx, id)
	if err != nil {
		return false, fmt.Errorf("expire a blob: %w", err)
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
	if err := b.uncharge(ctx, m, max(l.end(), 0), true); err != nil {
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
	get := func(key string) (int64, error) {
		e, err := b.usage.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return 0, nil
		}
		if err != nil || len(e.Value()) != 8 {
			return 0, errors.Join(err, errors.New("a count is not 8 bytes"))
		}
		return int64(binary.BigEndian.Uint64(e.Value())), nil
	}
	n, err1 := get("n")
	t, err2 := get("t")
	h, err3 := get("h")
	if err := errors.Join(err1, err2, err3); err != nil {
		return relaystore.BlobStats{}, fmt.Errorf("blob stats: %w", err)
	}
	return relaystore.BlobStats{Blobs: int(n), Charged: t, Held: h}, nil
}
