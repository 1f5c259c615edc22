package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// The relay's blob store (kinds 18 to 25, feature FeatureBlobs): a client
// reserves a blob of a size (BlobCreate), writes it from its start in order
// (BlobPut, each answered by what the relay holds), asks how much the relay
// holds to resume an upload (BlobStat), and anyone who knows the ID reads the
// complete blob by ranges (BlobGet, answered by BlobData). A request the
// blob store turns down is answered by BlobRefused with a reason; a
// malformed or rate-limited one by Error, as any other request.

// Blob relay kinds. Kind 17 belongs to the sender block.
const (
	RelayBlobCreate  RelayKind = 18 // client → server
	RelayBlobCreated RelayKind = 19 // server → client
	RelayBlobPut     RelayKind = 20 // client → server
	RelayBlobStat    RelayKind = 21 // client → server
	RelayBlobHeld    RelayKind = 22 // server → client
	RelayBlobGet     RelayKind = 23 // client → server
	RelayBlobData    RelayKind = 24 // server → client
	RelayBlobRefused RelayKind = 25 // server → client
)

// relayBlobFirst and relayBlobLast bound the blob kinds.
const (
	relayBlobFirst = RelayBlobCreate
	relayBlobLast  = RelayBlobRefused
)

var relayBlobKindNames = [...]string{
	RelayBlobCreate - relayBlobFirst:  "blob create",
	RelayBlobCreated - relayBlobFirst: "blob created",
	RelayBlobPut - relayBlobFirst:     "blob put",
	RelayBlobStat - relayBlobFirst:    "blob stat",
	RelayBlobHeld - relayBlobFirst:    "blob held",
	RelayBlobGet - relayBlobFirst:     "blob get",
	RelayBlobData - relayBlobFirst:    "blob data",
	RelayBlobRefused - relayBlobFirst: "blob refused",
}

const (
	// FeatureBlobs: the relay has a blob store and serves kinds 18 to 25.
	FeatureBlobs FeatureSet = 1 << 2

	// MaxBlobChunk is the most bytes one BlobPut writes or one BlobData
	// carries: 256 KiB less 64 bytes, so that the message with its header
	// (34 bytes) fits MaxRelayMessageSize, the websocket read limit.
	MaxBlobChunk = 256<<10 - 64
	// MinBlobChunk is the least a BlobPut writes unless it completes its
	// blob: the first put of a blob sets the blob's chunk size (at least
	// this, at most MaxBlobChunk), and every later one writes exactly that
	// many bytes, but the last, which may write fewer. So a relay keeps at
	// most one chunk's overhead per 64 KiB and finds the chunk holding any
	// offset by a division. A put that breaks the rule is Error{bad
	// request}; nothing else of the layout changes.
	MinBlobChunk = 64 << 10
	// MaxBlobSize bounds every size and offset of the protocol (1 TiB), so
	// that each fits an int64 with room to add a chunk. A relay's own
	// limit is far lower.
	MaxBlobSize = 1 << 40

	blobPutSize  = relayHeaderSize + 16 + 8 + 4 + MaxBlobChunk
	blobDataSize = relayHeaderSize + 8 + 4 + MaxBlobChunk
)

// Both chunk carriers fit the read limit without raising it.
var _ [MaxRelayMessageSize - max(blobPutSize, blobDataSize)]struct{}

// BlobCreate reserves a blob of Size bytes (1..MaxBlobSize) owned by the
// authenticated address.
type BlobCreate struct {
	Size int64
}

// BlobCreated answers BlobCreate with the blob's ID, chosen by the relay,
// and when its lifetime ends (Unix seconds).
type BlobCreated struct {
	ID      BlobID
	Expires int64
}

// BlobPut writes Data (1..MaxBlobChunk bytes) at Offset, which must be what
// the relay holds of the blob. The relay answers BlobHeld.
type BlobPut struct {
	ID     BlobID
	Offset int64
	Data   []byte
}

// BlobStat asks how much of a blob the relay holds.
type BlobStat struct {
	ID BlobID
}

// BlobHeld answers BlobStat and BlobPut: the relay holds Held bytes of the
// blob from its start, of Size; Held == Size means complete.
type BlobHeld struct {
	ID   BlobID
	Held int64
	Size int64
}

// BlobGet reads at most Length bytes (1..MaxBlobChunk) of a complete blob
// from Offset.
type BlobGet struct {
	ID     BlobID
	Offset int64
	Length uint32
}

// BlobData answers BlobGet with the bytes from Offset: fewer than asked
// only at the blob's end, none at or past it.
type BlobData struct {
	Offset int64
	Data   []byte
}

// BlobRefused turns a blob request down: nothing changed.
type BlobRefused struct {
	ID     BlobID
	Reason BlobRefuseReason
}

// BlobRefuseReason says why the relay turned a blob request down.
type BlobRefuseReason uint8

// Blob refusal reasons.
const (
	// BlobNotFound: no such blob (never created, or forgotten).
	BlobNotFound BlobRefuseReason = 1
	// BlobExpired: the blob's lifetime ended.
	BlobExpired BlobRefuseReason = 2
	// BlobBadOffset: a write not at the end of what the relay holds, or
	// past the blob's size.
	BlobBadOffset BlobRefuseReason = 3
	// BlobIncomplete: a read of a blob whose upload has not finished.
	BlobIncomplete BlobRefuseReason = 4
	// BlobQuota: the blob quota of the IP, of the address or of the relay
	// has no room.
	BlobQuota BlobRefuseReason = 5
	// BlobTooLarge: a size over the relay's largest blob.
	BlobTooLarge BlobRefuseReason = 6
	// BlobNotOwner: a write to a blob another address created.
	BlobNotOwner BlobRefuseReason = 7
)

var blobRefuseNames = [...]string{
	BlobNotFound:   "blob_not_found",
	BlobExpired:    "blob_expired",
	BlobBadOffset:  "blob_offset",
	BlobIncomplete: "blob_incomplete",
	BlobQuota:      "blob_quota",
	BlobTooLarge:   "blob_too_large",
	BlobNotOwner:   "blob_not_owner",
}

// String returns the reason's code, such as "blob_expired".
func (r BlobRefuseReason) String() string {
	if r.valid() {
		return blobRefuseNames[r]
	}
	return fmt.Sprintf("blob refuse reason %d", uint8(r))
}

func (r BlobRefuseReason) valid() bool { return r >= BlobNotFound && r <= BlobNotOwner }

// RelayKind implements RelayMessage.
func (BlobCreate) RelayKind() RelayKind { return RelayBlobCreate }

// RelayKind implements RelayMessage.
func (BlobCreated) RelayKind() RelayKind { return RelayBlobCreated }

// RelayKind implements RelayMessage.
func (BlobPut) RelayKind() RelayKind { return RelayBlobPut }

// RelayKind implements RelayMessage.
func (BlobStat) RelayKind() RelayKind { return RelayBlobStat }

// RelayKind implements RelayMessage.
func (BlobHeld) RelayKind() RelayKind { return RelayBlobHeld }

// RelayKind implements RelayMessage.
func (BlobGet) RelayKind() RelayKind { return RelayBlobGet }

// RelayKind implements RelayMessage.
func (BlobData) RelayKind() RelayKind { return RelayBlobData }

// RelayKind implements RelayMessage.
func (BlobRefused) RelayKind() RelayKind { return RelayBlobRefused }

func (BlobCreate) isRelayMessage()  {}
func (BlobCreated) isRelayMessage() {}
func (BlobPut) isRelayMessage()     {}
func (BlobStat) isRelayMessage()    {}
func (BlobHeld) isRelayMessage()    {}
func (BlobGet) isRelayMessage()     {}
func (BlobData) isRelayMessage()    {}
func (BlobRefused) isRelayMessage() {}

// isRelayBlob reports whether m is a blob message, for EncodeRelay.
func isRelayBlob(m RelayMessage) bool {
	switch m.(type) {
	case BlobCreate, BlobCreated, BlobPut, BlobStat, BlobHeld, BlobGet, BlobData, BlobRefused:
		return true
	}
	return false
}

// checkBlobRange checks a size or an offset against MaxBlobSize.
func checkBlobRange(field string, v, lo int64) error {
	if v < lo || v > MaxBlobSize {
		return fmt.Errorf("%s %d outside %d..%d: %w", field, v, lo, int64(MaxBlobSize), ErrMalformed)
	}
	return nil
}

// checkHeld checks that held lies within size.
func checkHeld(held, size int64) error {
	if err := checkBlobRange("size", size, 1); err != nil {
		return err
	}
	if held < 0 || held > size {
		return fmt.Errorf("held %d outside 0..%d: %w", held, size, ErrMalformed)
	}
	return nil
}

// checkChunk checks the length of a chunk.
func checkChunk(n, lo int) error {
	switch {
	case n > MaxBlobChunk:
		return fmt.Errorf("chunk of %d bytes over %d: %w", n, MaxBlobChunk, ErrMessageTooLarge)
	case n < lo:
		return fmt.Errorf("empty chunk: %w", ErrMalformed)
	}
	return nil
}

// appendRelayBlob appends the body of a blob message.
func appendRelayBlob(b []byte, m RelayMessage) ([]byte, error) {
	switch m := m.(type) {
	case BlobCreate:
		if err := checkBlobRange("size", m.Size, 1); err != nil {
			return nil, err
		}
		return binary.BigEndian.AppendUint64(b, uint64(m.Size)), nil
	case BlobCreated:
		b = append(b, m.ID[:]...)
		return binary.BigEndian.AppendUint64(b, uint64(m.Expires)), nil
	case BlobPut:
		if err := checkBlobRange("offset", m.Offset, 0); err != nil {
			return nil, err
		}
		if err := checkChunk(len(m.Data), 1); err != nil {
			return nil, err
		}
		b = slices.Grow(b, 16+8+4+len(m.Data))
		b = append(b, m.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(m.Offset))
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Data)))
		return append(b, m.Data...), nil
	case BlobStat:
		return append(b, m.ID[:]...), nil
	case BlobHeld:
		if err := checkHeld(m.Held, m.Size); err != nil {
			return nil, err
		}
		b = append(b, m.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(m.Held))
		return binary.BigEndian.AppendUint64(b, uint64(m.Size)), nil
	case BlobGet:
		if err := checkBlobRange("offset", m.Offset, 0); err != nil {
			return nil, err
		}
		if m.Length < 1 || m.Length > MaxBlobChunk {
			return nil, fmt.Errorf("length %d outside 1..%d: %w", m.Length, MaxBlobChunk, ErrMalformed)
		}
		b = append(b, m.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(m.Offset))
		return binary.BigEndian.AppendUint32(b, m.Length), nil
	case BlobData:
		if err := checkBlobRange("offset", m.Offset, 0); err != nil {
			return nil, err
		}
		if err := checkChunk(len(m.Data), 0); err != nil {
			return nil, err
		}
		b = slices.Grow(b, 8+4+len(m.Data))
		b = binary.BigEndian.AppendUint64(b, uint64(m.Offset))
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Data)))
		return append(b, m.Data...), nil
	case BlobRefused:
		if !m.Reason.valid() {
			return nil, fmt.Errorf("unknown blob refuse reason %d: %w", m.Reason, ErrMalformed)
		}
		b = append(b, m.ID[:]...)
		return append(b, byte(m.Reason)), nil
	}
	return nil, fmt.Errorf("unsupported type %T: %w", m, ErrMalformed)
}

// blobRange reads a u64 size or offset and checks it against MaxBlobSize.
func (r *reader) blobRange(field string, lo int64) int64 {
	v := r.u64(field)
	if r.err == nil && v > MaxBlobSize {
		r.fail(fmt.Errorf("%s %d over %d: %w", field, v, int64(MaxBlobSize), ErrMalformed))
		return 0
	}
	if err := checkBlobRange(field, int64(v), lo); r.err == nil && err != nil {
		r.fail(err)
	}
	return int64(v)
}

// relayBlob reads the body of a blob message.
func (r *reader) relayBlob(kind RelayKind) RelayMessage {
	switch kind {
	case RelayBlobCreate:
		return ok(r, BlobCreate{Size: r.blobRange("size", 1)})
	case RelayBlobCreated:
		var c BlobCreated
		r.array(c.ID[:], "blob ID")
		c.Expires = r.i64("expires")
		return ok(r, c)
	case RelayBlobPut:
		var p BlobPut
		r.array(p.ID[:], "blob ID")
		p.Offset = r.blobRange("offset", 0)
		p.Data = slices.Clone(r.sized("data", 1, MaxBlobChunk))
		return ok(r, p)
	case RelayBlobStat:
		var s BlobStat
		r.array(s.ID[:], "blob ID")
		return ok(r, s)
	case RelayBlobHeld:
		var h BlobHeld
		r.array(h.ID[:], "blob ID")
		h.Held = r.blobRange("held", 0)
		h.Size = r.blobRange("size", 1)
		if err := checkHeld(h.Held, h.Size); r.err == nil && err != nil {
			r.fail(err)
		}
		return ok(r, h)
	case RelayBlobGet:
		var g BlobGet
		r.array(g.ID[:], "blob ID")
		g.Offset = r.blobRange("offset", 0)
		g.Length = r.u32("length")
		if r.err == nil && (g.Length < 1 || g.Length > MaxBlobChunk) {
			r.fail(fmt.Errorf("length %d outside 1..%d: %w", g.Length, MaxBlobChunk, ErrMalformed))
		}
		return ok(r, g)
	case RelayBlobData:
		var d BlobData
		d.Offset = r.blobRange("offset", 0)
		if p := r.sized("data", 0, MaxBlobChunk); len(p) > 0 {
			d.Data = slices.Clone(p)
		}
		return ok(r, d)
	case RelayBlobRefused:
		var f BlobRefused
		r.array(f.ID[:], "blob ID")
		f.Reason = BlobRefuseReason(r.u8("reason"))
		if r.err == nil && !f.Reason.valid() {
			r.fail(fmt.Errorf("unknown blob refuse reason %d: %w", f.Reason, ErrMalformed))
		}
		return ok(r, f)
	}
	r.fail(fmt.Errorf("kind %d: %w", kind, ErrUnknownRelayKind))
	return nil
}
