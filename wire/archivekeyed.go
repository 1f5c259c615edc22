package wire

import (
	"bytes"
	"fmt"
)

// Keyed archives (issue 34, history at link time): the archive a device
// holding the account key writes for a device it links. It is sealed
// under a random key that travels in the sealed link package, not under a
// passphrase, so its header names no KDF: version 2 of the archive
// header, with a layout of its own. Version 1 (archive.go) is unchanged.
//
// Keyed header layout (ArchiveKeyedHeaderSize bytes):
//
//	[8]  magic "PARLEYBK"
//	u8   version (ArchiveKeyedVersion)
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

// ArchiveKeyedVersion is the version byte of a keyed archive's header.
const ArchiveKeyedVersion = 2

// ArchiveKeyedHeaderSize is a keyed header's size.
const ArchiveKeyedHeaderSize = 8 + 1 + 16 + 32

// ArchiveKindStaged is the record of a message received and not yet
// decided (keyed archives only).
const ArchiveKindStaged ArchiveKind = 10

// ArchiveKeyedHeader is a keyed archive's header.
type ArchiveKeyedHeader struct {
	ID    [16]byte
	Check [32]byte
}

// EncodeArchiveKeyedHeader returns h's bytes.
func EncodeArchiveKeyedHeader(h ArchiveKeyedHeader) ([]byte, error) {
	b := make([]byte, 0, ArchiveKeyedHeaderSize)
	b = append(b, ArchiveMagic[:]...)
	b = append(b, ArchiveKeyedVersion)
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
	r.version(ArchiveKeyedVersion)
	var h ArchiveKeyedHeader
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
