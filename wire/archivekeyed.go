package wire

import (
	"bytes"
	"fmt"
)

// Keyed archives (issue 34, history at link time): the archive a device
// holding the account key writes for a device it links. It is sealed
// under a random key that travels in the sealed link package, not under a
// passphrase, so its header names no KDF: versions 2 and 4 of the archive
// header, with a layout of their own. Version 2 holds version 1's records
// (archive.go) plus kind 10; version 4, written since kind 11, may hold
// kind 11 too (as version 3 of a backup does), so that a reader built
// before it refuses it at the header.
//
// Keyed header layout (ArchiveKeyedHeaderSize bytes):
//
//	[8]  magic "PARLEYBK"
//	u8   version (ArchiveKeyedVersion1 or ArchiveKeyedVersion)
//	[16] archive ID (random: names the archive, prefixes every nonce)
//	[32] key check (proves the key before any record is opened)
//
// A keyed archive's records are those of version 1, plus kind 10, which
// only a keyed archive holds:
//
//	10 staged:  address sender, [16] id, i64 received at (ns), [32] digest,
//	            u32 length + stored frame (1..MaxArchiveFrame)
//
// a received message still undecided on the writing device at the cut,
// as that device's store holds it (the engine's stored frame).

// ArchiveKeyedVersion1 is the version byte of the first keyed archive
// format, with no kind-11 record: still read, no longer written.
const ArchiveKeyedVersion1 = 2

// ArchiveKeyedVersion is the version byte of the keyed header this build
// writes: its records may include kind 11.
const ArchiveKeyedVersion = 4

// ArchiveKeyedHeaderSize is a keyed header's size.
const ArchiveKeyedHeaderSize = 8 + 1 + 16 + 32

// ArchiveKindStaged is the record of a message received and not yet
// decided (keyed archives only).
const ArchiveKindStaged ArchiveKind = 10

// ArchiveKeyedHeader is a keyed archive's header.
type ArchiveKeyedHeader struct {
	// Version is the header's version byte, ArchiveKeyedVersion1 or
	// ArchiveKeyedVersion; zero encodes as ArchiveKeyedVersion.
	Version uint8
	ID      [16]byte
	Check   [32]byte
}

// EncodeArchiveKeyedHeader returns h's bytes; a version other than the
// two is ErrUnsupportedVersion.
func EncodeArchiveKeyedHeader(h ArchiveKeyedHeader) ([]byte, error) {
	v := h.Version
	if v == 0 {
		v = ArchiveKeyedVersion
	}
	if v != ArchiveKeyedVersion1 && v != ArchiveKeyedVersion {
		return nil, fmt.Errorf("wire: encode keyed archive header: version %d: %w", v, ErrUnsupportedVersion)
	}
	b := make([]byte, 0, ArchiveKeyedHeaderSize)
	b = append(b, ArchiveMagic[:]...)
	b = append(b, v)
	b = append(b, h.ID[:]...)
	return append(b, h.Check[:]...), nil
}

// DecodeArchiveKeyedHeader parses a keyed header: another magic,
// truncation or trailing bytes are ErrMalformed; another version (after
// the magic) ErrUnsupportedVersion.
func DecodeArchiveKeyedHeader(b []byte) (ArchiveKeyedHeader, error) {
	if len(b) < len(ArchiveMagic) || !bytes.Equal(b[:len(ArchiveMagic)], ArchiveMagic[:]) {
		return ArchiveKeyedHeader{}, fmt.Errorf("wire: decode keyed archive header: not a parley archive: %w", ErrMalformed)
	}
	r := reader{b: b[len(ArchiveMagic):]}
	var h ArchiveKeyedHeader
	h.Version = r.versions(ArchiveKeyedVersion1, ArchiveKeyedVersion)
	r.array(h.ID[:], "archive id")
	r.array(h.Check[:], "key check")
	if err := r.end(); err != nil {
		return ArchiveKeyedHeader{}, fmt.Errorf("wire: decode keyed archive header: %w", err)
	}
	return h, nil
}

// ArchiveStaged is a received message the writing device had not decided
// at the cut: the new device holds it pending too, so that either device
// may decide it (decisions travel over self-lanes).
type ArchiveStaged struct {
	Sender     string
	ID         LogicalID
	ReceivedAt int64
	Digest     [32]byte
	Frame      []byte // the engine's stored frame of the message
}

// ArchiveKind implements ArchiveRecord.
func (ArchiveStaged) ArchiveKind() ArchiveKind { return ArchiveKindStaged }
