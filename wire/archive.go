package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// Backup archives (issue 34): a file that holds an account's key and its
// history, sealed under a passphrase of its own. This file holds the pure
// byte layouts; the engine derives the key and seals each record
// (engine/archive.go). An archive is a header, then records, each a u32
// length and an AEAD ciphertext of one ArchiveRecord, the last one an
// ArchiveEnd (docs/wire-format.md).
//
// Header layout (ArchiveHeaderSize bytes):
//
//	[8]  magic "PARLEYBK"
//	u8   version (ArchiveVersion1 or ArchiveVersion)
//	u8   KDF (1: Argon2id)
//	u32  Argon2id passes, u32 memory in KiB, u8 threads
//	[16] salt
//	[16] archive ID (random: names the archive, prefixes every nonce)
//	[32] key check (proves the passphrase before any record is opened)
//
// Record plaintext layout: u8 kind, then the kind's fields:
//
//	1 account:   [32] account key seed, u32 length + device list, u32 device number of the writer
//	2 contact:   address, u8 length + name (UTF-8, 1..MaxLinkNameSize)
//	3 pin:       address, u16 length + identity (1..MaxArchiveIdentity), i64 pinned at (ns)
//	4 blocked:   address, i64 at (ns)
//	5 accepted:  address, i64 at (ns)
//	6 group:     [16] id, u16 length + name, i64 created at (ns), u8 flag + [16] start change,
//	             u32 length + snapshot, u16 length + vouchers, u16 count of changes, each:
//	             [16] id, address author, u64 generation, i64 at (ns), u32 length + frame
//	7 message:   address peer, u8 direction (1 in, 2 out), [16] id, i64 at (ns), u8 state,
//	             extras, u32 length + body
//	8 group msg: [16] group, address sender, [16] id, i64 at (ns), extras, u32 length + body
//	9 end:       u64 records before it, u64 messages, u32 groups
//	11 message by: address peer, address device, u8 direction (1 in), [16] id, i64 at (ns),
//	             u8 state, extras, u32 length + body
//
// extras: u8 action (0, 3..6), u8 flag + [16] reply-to, u32 edits, u8 deleted (0 or 1).
//
// Kind 11 is a received one-to-one entry that names the device of the
// peer's person that sent it (the store's history.sent_by): a kind 7
// record with the device after the peer. It is a history record like kind
// 7, in the same place of the order (a writer mixes the two in the
// history's order); kind 10 is a keyed archive's (archivekeyed.go). Only
// an archive of header version 3 (ArchiveVersion) may hold it: its
// records are version 1's plus kind 11, its header version 1's layout. A
// reader built before kind 11 knows version 1 alone and refuses a version
// 3 archive at its header (ErrUnsupportedVersion) instead of finding its
// first kind-11 record malformed; a reader of this build reads both and
// refuses kind 11 in a version 1 archive (the engine's reader). Version 2
// is the keyed header's (archivekeyed.go), so a backup and a link's
// archive are never taken for each other.

// ArchiveVersion1 is the version byte of the first archive format, with
// no kind-11 record: still read, no longer written.
const ArchiveVersion1 = 1

// ArchiveVersion is the version byte of the archive header this build
// writes: version 1's layout, records that may include kind 11.
const ArchiveVersion = 3

// ArchiveMagic opens every archive: a file that does not start with it is
// not one.
var ArchiveMagic = [8]byte{'P', 'A', 'R', 'L', 'E', 'Y', 'B', 'K'}

// ArchiveKDFArgon2id names Argon2id, the one KDF of version 1.
const ArchiveKDFArgon2id = 1

// Bounds of archives.
const (
	// ArchiveHeaderSize is the header's size.
	ArchiveHeaderSize = 8 + 1 + 1 + 4 + 4 + 1 + 16 + 16 + 32
	// MaxArchiveKDFPasses and MaxArchiveKDFMemoryKiB bound what a header
	// may ask for: a damaged or hostile file must not make a restore run
	// for hours or take all memory before its passphrase is checked
	// (the profile's own limits, store/kdf.go).
	MaxArchiveKDFPasses    = 64
	MaxArchiveKDFMemoryKiB = 4 << 20
	// MaxArchiveBody is the longest message body a record carries: a
	// history entry holds at most a frame's body.
	MaxArchiveBody = MaxBodySize
	// MaxArchiveIdentity is the longest pinned identity record.
	MaxArchiveIdentity = 1024
	// MaxArchiveGroupChanges is the most roster changes a group record
	// carries (a group's log is compacted well before).
	MaxArchiveGroupChanges = 4096
	// MaxArchiveFrame is the longest roster change frame.
	MaxArchiveFrame = MaxFrameSize
	// MaxArchiveGroupName bounds a group's name and MaxArchiveVouchers its
	// vouchers text.
	MaxArchiveGroupName = 1024
	MaxArchiveVouchers  = 16 * 1024
	// MaxArchiveRecord is the longest record plaintext: a group record at
	// its bounds is the largest.
	MaxArchiveRecord = 16 << 20
)

// ArchiveHeader is an archive's header.
type ArchiveHeader struct {
	// Version is the header's version byte, ArchiveVersion1 or
	// ArchiveVersion; zero encodes as ArchiveVersion.
	Version   uint8
	Passes    uint32
	MemoryKiB uint32
	Threads   uint8
	Salt      [16]byte
	ID        [16]byte
	Check     [32]byte
}

// CheckArchiveKDF says why an archive may not use these Argon2id
// parameters, or nil.
func CheckArchiveKDF(passes, memoryKiB uint32, threads uint8) error {
	switch {
	case passes < 1 || passes > MaxArchiveKDFPasses:
		return fmt.Errorf("Argon2id passes %d outside 1..%d: %w", passes, MaxArchiveKDFPasses, ErrMalformed)
	case memoryKiB < 8*uint32(max(threads, 1)) || memoryKiB > MaxArchiveKDFMemoryKiB:
		return fmt.Errorf("Argon2id memory %d KiB outside %d..%d: %w", memoryKiB, 8*uint32(max(threads, 1)), MaxArchiveKDFMemoryKiB, ErrMalformed)
	case threads < 1:
		return fmt.Errorf("Argon2id threads 0: %w", ErrMalformed)
	}
	return nil
}

// EncodeArchiveHeader returns h's bytes; parameters CheckArchiveKDF
// refuses are ErrMalformed.
func EncodeArchiveHeader(h ArchiveHeader) ([]byte, error) {
	if err := CheckArchiveKDF(h.Passes, h.MemoryKiB, h.Threads); err != nil {
		return nil, fmt.Errorf("wire: encode archive header: %w", err)
	}
	b := make([]byte, 0, ArchiveHeaderSize)
	b = append(b, ArchiveMagic[:]...)
	v := h.Version
	if v == 0 {
		v = ArchiveVersion
	}
	if v != ArchiveVersion1 && v != ArchiveVersion {
		return nil, fmt.Errorf("wire: encode archive header: version %d: %w", v, ErrUnsupportedVersion)
	}
	b = append(b, v, ArchiveKDFArgon2id)
	b = binary.BigEndian.AppendUint32(b, h.Passes)
	b = binary.BigEndian.AppendUint32(b, h.MemoryKiB)
	b = append(b, h.Threads)
	b = append(b, h.Salt[:]...)
	b = append(b, h.ID[:]...)
	return append(b, h.Check[:]...), nil
}

// DecodeArchiveHeader parses a header: another magic, an unknown KDF or
// its parameters out of bounds, truncation or trailing bytes are
// ErrMalformed; another version (after the magic) ErrUnsupportedVersion.
func DecodeArchiveHeader(b []byte) (ArchiveHeader, error) {
	if len(b) < len(ArchiveMagic) || !bytes.Equal(b[:len(ArchiveMagic)], ArchiveMagic[:]) {
		return ArchiveHeader{}, fmt.Errorf("wire: decode archive header: not a parley archive: %w", ErrMalformed)
	}
	r := reader{b: b[len(ArchiveMagic):]}
	var h ArchiveHeader
	h.Version = r.versions(ArchiveVersion1, ArchiveVersion)
	if k := r.u8("kdf"); r.err == nil && k != ArchiveKDFArgon2id {
		r.fail(fmt.Errorf("kdf %d: %w", k, ErrMalformed))
	}
	h.Passes = r.u32("passes")
	h.MemoryKiB = r.u32("memory")
	h.Threads = r.u8("threads")
	if r.err == nil {
		if err := CheckArchiveKDF(h.Passes, h.MemoryKiB, h.Threads); err != nil {
			r.fail(err)
		}
	}
	r.array(h.Salt[:], "salt")
	r.array(h.ID[:], "archive id")
	r.array(h.Check[:], "key check")
	if err := r.end(); err != nil {
		return ArchiveHeader{}, fmt.Errorf("wire: decode archive header: %w", err)
	}
	return h, nil
}

// ArchiveKind is a record's kind byte.
type ArchiveKind uint8

// Record kinds, in the order a writer puts them.
const (
	ArchiveKindAccount      ArchiveKind = 1
	ArchiveKindContact      ArchiveKind = 2
	ArchiveKindPin          ArchiveKind = 3
	ArchiveKindBlocked      ArchiveKind = 4
	ArchiveKindAccepted     ArchiveKind = 5
	ArchiveKindGroup        ArchiveKind = 6
	ArchiveKindMessage      ArchiveKind = 7
	ArchiveKindGroupMessage ArchiveKind = 8
	ArchiveKindEnd          ArchiveKind = 9
	// ArchiveKindMessageBy is a received message with the device that
	// sent it (an ArchiveMessage whose SentBy is set); it sorts as
	// ArchiveKindMessage (ArchiveKind.Order).
	ArchiveKindMessageBy ArchiveKind = 11
)

// ArchiveRecord is one record of an archive: one of the Archive* types of
// this file.
type ArchiveRecord interface {
	ArchiveKind() ArchiveKind
}

// ArchiveAccount carries the account key and the device list it signed,
// as the writing device (Device) held them.
type ArchiveAccount struct {
	Key    [32]byte // the account key's seed: a secret
	List   DeviceList
	Device uint32
}

// ArchiveContact is a named contact.
type ArchiveContact struct {
	Address string
	Name    string
}

// ArchivePin is a pinned identity.
type ArchivePin struct {
	Address  string
	Identity []byte
	PinnedAt int64
}

// ArchiveBlocked is a blocked sender.
type ArchiveBlocked struct {
	Address string
	At      int64
}

// ArchiveAccepted is a peer whose request was accepted (or who was
// written to first).
type ArchiveAccepted struct {
	Address string
	At      int64
}

// ArchiveChange is one roster change of a group's log.
type ArchiveChange struct {
	ID         LogicalID
	Author     string
	Generation uint64
	At         int64
	Frame      []byte
}

// ArchiveGroup is a group and its roster log, as the store keeps it.
type ArchiveGroup struct {
	ID        GroupID
	Name      string
	CreatedAt int64
	Start     *LogicalID // the change that started the group here
	Snapshot  []byte     // a compaction's roster, nil for none
	Vouchers  string
	Changes   []ArchiveChange
}

// ArchiveExtras are a message's reply, edit count and tombstone.
type ArchiveExtras struct {
	Action  uint8 // 0, or the action kind of an entry that is one (3..6)
	ReplyTo *LogicalID
	Edits   uint32
	Deleted bool
}

// ArchiveMessage is one entry of a one-to-one history.
type ArchiveMessage struct {
	Peer      string
	Direction uint8 // 1 received, 2 sent
	ID        LogicalID
	At        int64
	State     uint8 // a sent message's state (1 pending, 2 acknowledged, 3 abandoned)
	Extras    ArchiveExtras
	Body      []byte
	// SentBy is, for a received entry, the device of the peer's person
	// that sent it, when known: set, the record is kind 11.
	SentBy string
}

// ArchiveGroupMessage is one entry of a group's history.
type ArchiveGroupMessage struct {
	Group  GroupID
	Sender string
	ID     LogicalID
	At     int64
	Extras ArchiveExtras
	Body   []byte
}

// ArchiveEnd closes an archive: it counts what came before, so that an
// archive cut at a record boundary is told from a whole one.
type ArchiveEnd struct {
	Records  uint64
	Messages uint64
	Groups   uint32
}

// ArchiveKind implements ArchiveRecord.
func (ArchiveAccount) ArchiveKind() ArchiveKind { return ArchiveKindAccount }

// ArchiveKind implements ArchiveRecord.
func (ArchiveContact) ArchiveKind() ArchiveKind { return ArchiveKindContact }

// ArchiveKind implements ArchiveRecord.
func (ArchivePin) ArchiveKind() ArchiveKind { return ArchiveKindPin }

// ArchiveKind implements ArchiveRecord.
func (ArchiveBlocked) ArchiveKind() ArchiveKind { return ArchiveKindBlocked }

// ArchiveKind implements ArchiveRecord.
func (ArchiveAccepted) ArchiveKind() ArchiveKind { return ArchiveKindAccepted }

// ArchiveKind implements ArchiveRecord.
func (ArchiveGroup) ArchiveKind() ArchiveKind { return ArchiveKindGroup }

// ArchiveKind implements ArchiveRecord: 11 for a message naming the
// device that sent it, else 7.
func (m ArchiveMessage) ArchiveKind() ArchiveKind {
	if m.SentBy != "" {
		return ArchiveKindMessageBy
	}
	return ArchiveKindMessage
}

// Order is k's place in the order records come in: a message naming its
// device (11) comes among the other one-to-one messages (7), every other
// kind in its number's place.
func (k ArchiveKind) Order() ArchiveKind {
	if k == ArchiveKindMessageBy {
		return ArchiveKindMessage
	}
	return k
}

// ArchiveKind implements ArchiveRecord.
func (ArchiveGroupMessage) ArchiveKind() ArchiveKind { return ArchiveKindGroupMessage }

// ArchiveKind implements ArchiveRecord.
func (ArchiveEnd) ArchiveKind() ArchiveKind { return ArchiveKindEnd }

func checkArchiveExtras(x ArchiveExtras) error {
	if x.Action != 0 && (x.Action < 3 || x.Action > 6) {
		return fmt.Errorf("action %d: %w", x.Action, ErrMalformed)
	}
	return nil
}

func checkArchiveName(what, s string, hi int) error {
	if len(s) == 0 || len(s) > hi || !utf8.ValidString(s) {
		return fmt.Errorf("%s of %d bytes, want 1..%d of UTF-8: %w", what, len(s), hi, ErrMalformed)
	}
	return nil
}

// checkArchiveRecord checks what an encoder must refuse and a decoder
// rejects after reading.
func checkArchiveRecord(rec ArchiveRecord) error {
	switch r := rec.(type) {
	case ArchiveAccount:
		return nil // the list is checked by its encoder
	case ArchiveContact:
		if err := checkAddress(r.Address); err != nil {
			return err
		}
		return checkArchiveName("name", r.Name, MaxLinkNameSize)
	case ArchivePin:
		if len(r.Identity) == 0 || len(r.Identity) > MaxArchiveIdentity {
			return fmt.Errorf("identity of %d bytes, want 1..%d: %w", len(r.Identity), MaxArchiveIdentity, ErrMalformed)
		}
		return checkAddress(r.Address)
	case ArchiveBlocked:
		return checkAddress(r.Address)
	case ArchiveAccepted:
		return checkAddress(r.Address)
	case ArchiveGroup:
		if len(r.Name) > MaxArchiveGroupName || !utf8.ValidString(r.Name) {
			return fmt.Errorf("group name of %d bytes, want 0..%d of UTF-8: %w", len(r.Name), MaxArchiveGroupName, ErrMalformed)
		}
		if len(r.Vouchers) > MaxArchiveVouchers || !utf8.ValidString(r.Vouchers) {
			return fmt.Errorf("vouchers of %d bytes: %w", len(r.Vouchers), ErrMalformed)
		}
		if len(r.Snapshot) > MaxArchiveFrame {
			return fmt.Errorf("snapshot of %d bytes over %d: %w", len(r.Snapshot), MaxArchiveFrame, ErrMessageTooLarge)
		}
		if len(r.Changes) > MaxArchiveGroupChanges {
			return fmt.Errorf("%d roster changes over %d: %w", len(r.Changes), MaxArchiveGroupChanges, ErrMessageTooLarge)
		}
		for i, c := range r.Changes {
			if err := checkAddress(c.Author); err != nil {
				return fmt.Errorf("change %d: %w", i, err)
			}
			if len(c.Frame) == 0 || len(c.Frame) > MaxArchiveFrame {
				return fmt.Errorf("change %d: frame of %d bytes, want 1..%d: %w", i, len(c.Frame), MaxArchiveFrame, ErrMalformed)
			}
		}
	case ArchiveMessage:
		if err := checkAddress(r.Peer); err != nil {
			return err
		}
		if r.Direction != 1 && r.Direction != 2 {
			return fmt.Errorf("direction %d: %w", r.Direction, ErrMalformed)
		}
		if r.SentBy != "" {
			if err := checkAddress(r.SentBy); err != nil {
				return fmt.Errorf("sent by: %w", err)
			}
			if r.Direction != 1 {
				return fmt.Errorf("a sent message (direction %d) naming the device that sent it: %w", r.Direction, ErrMalformed)
			}
		}
		if len(r.Body) > MaxArchiveBody {
			return fmt.Errorf("body of %d bytes over %d: %w", len(r.Body), MaxArchiveBody, ErrMessageTooLarge)
		}
		return checkArchiveExtras(r.Extras)
	case ArchiveGroupMessage:
		if err := checkAddress(r.Sender); err != nil {
			return err
		}
		if len(r.Body) > MaxArchiveBody {
			return fmt.Errorf("body of %d bytes over %d: %w", len(r.Body), MaxArchiveBody, ErrMessageTooLarge)
		}
		return checkArchiveExtras(r.Extras)
	case ArchiveStaged:
		if err := checkAddress(r.Sender); err != nil {
			return err
		}
		if len(r.Frame) == 0 || len(r.Frame) > MaxArchiveFrame {
			return fmt.Errorf("staged frame of %d bytes, want 1..%d: %w", len(r.Frame), MaxArchiveFrame, ErrMalformed)
		}
	case ArchiveEnd:
	case nil:
		return fmt.Errorf("no record: %w", ErrMalformed)
	default:
		return fmt.Errorf("record %T: %w", rec, ErrMalformed)
	}
	return nil
}

func appendOptionalID(b []byte, id *LogicalID) []byte {
	if id == nil {
		return append(b, 0)
	}
	return append(append(b, 1), id[:]...)
}

func appendArchiveExtras(b []byte, x ArchiveExtras) []byte {
	b = append(b, x.Action)
	b = appendOptionalID(b, x.ReplyTo)
	b = binary.BigEndian.AppendUint32(b, x.Edits)
	if x.Deleted {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendSized32(b, v []byte) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(v))), v...)
}

func appendSized16(b []byte, v string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(v))), v...)
}

// EncodeArchiveRecord returns rec's plaintext bytes. What a decoder would
// reject is refused: ErrMessageTooLarge for a body, a group or a record
// over its bound, ErrMalformed for the rest.
func EncodeArchiveRecord(rec ArchiveRecord) ([]byte, error) {
	if err := checkArchiveRecord(rec); err != nil {
		return nil, fmt.Errorf("wire: encode archive record: %w", err)
	}
	b := []byte{byte(rec.ArchiveKind())}
	switch r := rec.(type) {
	case ArchiveAccount:
		list, err := EncodeDeviceList(r.List)
		if err != nil {
			return nil, fmt.Errorf("wire: encode archive record: %w", err)
		}
		b = append(b, r.Key[:]...)
		b = appendSized32(b, list)
		b = binary.BigEndian.AppendUint32(b, r.Device)
	case ArchiveContact:
		b = appendAddress(b, r.Address)
		b = append(append(b, byte(len(r.Name))), r.Name...)
	case ArchivePin:
		b = appendAddress(b, r.Address)
		b = append(binary.BigEndian.AppendUint16(b, uint16(len(r.Identity))), r.Identity...)
		b = binary.BigEndian.AppendUint64(b, uint64(r.PinnedAt))
	case ArchiveBlocked:
		b = appendAddress(b, r.Address)
		b = binary.BigEndian.AppendUint64(b, uint64(r.At))
	case ArchiveAccepted:
		b = appendAddress(b, r.Address)
		b = binary.BigEndian.AppendUint64(b, uint64(r.At))
	case ArchiveGroup:
		b = append(b, r.ID[:]...)
		b = appendSized16(b, r.Name)
		b = binary.BigEndian.AppendUint64(b, uint64(r.CreatedAt))
		b = appendOptionalID(b, r.Start)
		b = appendSized32(b, r.Snapshot)
		b = appendSized16(b, r.Vouchers)
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Changes)))
		for _, c := range r.Changes {
			b = append(b, c.ID[:]...)
			b = appendAddress(b, c.Author)
			b = binary.BigEndian.AppendUint64(b, c.Generation)
			b = binary.BigEndian.AppendUint64(b, uint64(c.At))
			b = appendSized32(b, c.Frame)
		}
	case ArchiveMessage:
		b = appendAddress(b, r.Peer)
		if r.SentBy != "" {
			b = appendAddress(b, r.SentBy)
		}
		b = append(b, r.Direction)
		b = append(b, r.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(r.At))
		b = append(b, r.State)
		b = appendArchiveExtras(b, r.Extras)
		b = appendSized32(b, r.Body)
	case ArchiveGroupMessage:
		b = append(b, r.Group[:]...)
		b = appendAddress(b, r.Sender)
		b = append(b, r.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(r.At))
		b = appendArchiveExtras(b, r.Extras)
		b = appendSized32(b, r.Body)
	case ArchiveStaged:
		b = appendAddress(b, r.Sender)
		b = append(b, r.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(r.ReceivedAt))
		b = append(b, r.Digest[:]...)
		b = appendSized32(b, r.Frame)
	case ArchiveEnd:
		b = binary.BigEndian.AppendUint64(b, r.Records)
		b = binary.BigEndian.AppendUint64(b, r.Messages)
		b = binary.BigEndian.AppendUint32(b, r.Groups)
	}
	if len(b) > MaxArchiveRecord {
		return nil, fmt.Errorf("wire: encode archive record: %d bytes over %d: %w", len(b), MaxArchiveRecord, ErrMessageTooLarge)
	}
	return b, nil
}

func (r *reader) optionalID(field string) *LogicalID {
	if !r.flag(field + " flag") {
		return nil
	}
	var id LogicalID
	r.array(id[:], field)
	if r.err != nil {
		return nil
	}
	return &id
}

func (r *reader) archiveExtras() ArchiveExtras {
	x := ArchiveExtras{Action: r.u8("action")}
	x.ReplyTo = r.optionalID("reply to")
	x.Edits = r.u32("edits")
	x.Deleted = r.flag("deleted")
	return x
}

// sized16 reads a u16 length up to hi and that many bytes, copied.
func (r *reader) sized16(field string, hi int) string {
	n := int(r.u16(field + " length"))
	if r.err == nil && n > hi {
		r.fail(fmt.Errorf("%s length %d over %d: %w", field, n, hi, ErrMalformed))
	}
	return string(r.take(n, field))
}

// copied returns a copy of p, nil for an empty p.
func copied(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

// DecodeArchiveRecord parses a record's plaintext: over MaxArchiveRecord
// is ErrMessageTooLarge; an unknown kind, a field out of its bounds,
// truncation or trailing bytes ErrMalformed.
func DecodeArchiveRecord(b []byte) (ArchiveRecord, error) {
	if len(b) > MaxArchiveRecord {
		return nil, fmt.Errorf("wire: decode archive record: %d bytes over %d: %w", len(b), MaxArchiveRecord, ErrMessageTooLarge)
	}
	r := reader{b: b}
	var rec ArchiveRecord
	switch k := ArchiveKind(r.u8("kind")); k {
	case ArchiveKindAccount:
		var a ArchiveAccount
		r.array(a.Key[:], "account key")
		a.List = r.sizedDeviceList()
		a.Device = r.u32("device")
		rec = a
	case ArchiveKindContact:
		c := ArchiveContact{Address: r.address("contact address")}
		c.Name = string(r.take(int(r.u8("name length")), "name"))
		rec = c
	case ArchiveKindPin:
		p := ArchivePin{Address: r.address("pin address")}
		p.Identity = copied(r.take(int(r.u16("identity length")), "identity"))
		p.PinnedAt = r.i64("pinned at")
		rec = p
	case ArchiveKindBlocked:
		rec = ArchiveBlocked{Address: r.address("blocked address"), At: r.i64("at")}
	case ArchiveKindAccepted:
		rec = ArchiveAccepted{Address: r.address("accepted address"), At: r.i64("at")}
	case ArchiveKindGroup:
		var g ArchiveGroup
		r.array(g.ID[:], "group id")
		g.Name = r.sized16("group name", MaxArchiveGroupName)
		g.CreatedAt = r.i64("created at")
		g.Start = r.optionalID("start change")
		g.Snapshot = copied(r.sized("snapshot", 0, MaxArchiveFrame))
		g.Vouchers = r.sized16("vouchers", MaxArchiveVouchers)
		n := int(r.u16("change count"))
		if r.err == nil && n > MaxArchiveGroupChanges {
			r.fail(fmt.Errorf("%d roster changes over %d: %w", n, MaxArchiveGroupChanges, ErrMalformed))
		}
		for i := 0; i < n && r.err == nil; i++ {
			var c ArchiveChange
			r.array(c.ID[:], "change id")
			c.Author = r.address("change author")
			c.Generation = r.u64("generation")
			c.At = r.i64("change at")
			c.Frame = copied(r.sized("change frame", 1, MaxArchiveFrame))
			g.Changes = append(g.Changes, c)
		}
		rec = g
	case ArchiveKindMessage, ArchiveKindMessageBy:
		m := ArchiveMessage{Peer: r.address("peer")}
		if k == ArchiveKindMessageBy {
			m.SentBy = r.address("sent by")
		}
		m.Direction = r.u8("direction")
		r.array(m.ID[:], "message id")
		m.At = r.i64("at")
		m.State = r.u8("state")
		m.Extras = r.archiveExtras()
		m.Body = copied(r.sized("body", 0, MaxArchiveBody))
		rec = m
	case ArchiveKindGroupMessage:
		var m ArchiveGroupMessage
		r.array(m.Group[:], "group id")
		m.Sender = r.address("sender")
		r.array(m.ID[:], "message id")
		m.At = r.i64("at")
		m.Extras = r.archiveExtras()
		m.Body = copied(r.sized("body", 0, MaxArchiveBody))
		rec = m
	case ArchiveKindStaged:
		m := ArchiveStaged{Sender: r.address("sender")}
		r.array(m.ID[:], "message id")
		m.ReceivedAt = r.i64("received at")
		r.array(m.Digest[:], "digest")
		m.Frame = copied(r.sized("staged frame", 1, MaxArchiveFrame))
		rec = m
	case ArchiveKindEnd:
		rec = ArchiveEnd{Records: r.u64("records"), Messages: r.u64("messages"), Groups: r.u32("groups")}
	default:
		r.fail(fmt.Errorf("record kind %d: %w", k, ErrMalformed))
	}
	if r.err == nil {
		if err := checkArchiveRecord(rec); err != nil {
			r.fail(err)
		}
	}
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("wire: decode archive record: %w", err)
	}
	return rec, nil
}
