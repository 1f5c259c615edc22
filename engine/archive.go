package engine

import (
	"bufio"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"

	"github.com/parley-chat/parley/wire"
)

// Sealing backup archives (issue 34). The passphrase goes through Argon2id
// with the header's parameters and salt; HKDF splits the result into the
// records' key and a key check kept in the header, so that a wrong
// passphrase is told from a damaged file before any record is opened.
// Every record is sealed with XChaCha20-Poly1305 under a nonce made of the
// archive's ID and the record's index; the associated data is the whole
// header, the index and whether the record is the last. A record moved,
// dropped, repeated or taken from another archive does not open; a file
// cut at a record boundary lacks its end record (wire.ArchiveEnd), which
// also counts what came before it.

// Labels of the archive's keys.
const (
	labelArchiveKey   = "parley/v1/archive-key"
	labelArchiveCheck = "parley/v1/archive-check"
)

// Errors of archives, each one line a person can act on. Every error
// OpenArchive and ArchiveReader.Next return is one of them.
var (
	// ErrArchivePassphrase: the passphrase does not open this archive (or
	// its header was altered, which looks the same).
	ErrArchivePassphrase = errors.New("wrong backup passphrase (or the archive's header was altered)")
	// ErrArchiveDamaged: not a parley archive, or a record that does not
	// open or does not belong where it is.
	ErrArchiveDamaged = errors.New("the archive is damaged or altered")
	// ErrArchiveTruncated: the file ends before the archive's end record.
	ErrArchiveTruncated = errors.New("the archive is truncated (a backup that did not finish?)")
	// ErrArchiveVersion: an archive of a format this build does not know.
	ErrArchiveVersion = errors.New("the archive is of a newer format: restore it with a newer parley")
)

// ArchiveKDF are the Argon2id parameters of an archive.
type ArchiveKDF struct {
	Passes    uint32
	MemoryKiB uint32
	Threads   uint8
}

// DefaultArchiveKDF is what a backup uses unless told otherwise: the
// profile's own default (store.DefaultKDF).
var DefaultArchiveKDF = ArchiveKDF{Passes: 3, MemoryKiB: 64 * 1024, Threads: 2}

// RestoreArchiveKDF bounds the Argon2id work a restore runs for an
// archive's header before its passphrase is checked: the format allows
// up to 64 passes over 4 GiB (wire.CheckArchiveKDF), which a damaged or
// hostile file could ask for to make a restore run for hours or exhaust
// memory. 16 passes over 1 GiB is well above any backup parley writes (a
// backup refuses more) and still bounded on a small machine.
var RestoreArchiveKDF = ArchiveKDF{Passes: 16, MemoryKiB: 1 << 20, Threads: 16}

// ArchiveKDFError means an archive's header asks for more Argon2id work
// than the reader runs (OpenArchive's limit): refused before any
// derivation. It is an ErrArchiveDamaged.
type ArchiveKDFError struct {
	Header, Limit ArchiveKDF
}

func (e *ArchiveKDFError) Error() string {
	return fmt.Sprintf("%v: its header asks for Argon2id %d passes over %d MiB with %d threads, over this reader's limit of %d passes over %d MiB with %d threads",
		ErrArchiveDamaged, e.Header.Passes, e.Header.MemoryKiB/1024, e.Header.Threads, e.Limit.Passes, e.Limit.MemoryKiB/1024, e.Limit.Threads)
}

// Unwrap makes an ArchiveKDFError an ErrArchiveDamaged.
func (e *ArchiveKDFError) Unwrap() error { return ErrArchiveDamaged }

// Exceeds reports whether k asks for more than limit (a zero field of
// limit bounds nothing).
func (k ArchiveKDF) Exceeds(limit ArchiveKDF) bool {
	return (limit.Passes != 0 && k.Passes > limit.Passes) || (limit.MemoryKiB != 0 && k.MemoryKiB > limit.MemoryKiB) ||
		(limit.Threads != 0 && k.Threads > limit.Threads)
}

// maxArchiveSealed is the longest sealed record.
const maxArchiveSealed = wire.MaxArchiveRecord + chacha20poly1305.Overhead

// archiveKeys derives the records' AEAD and the key check.
func archiveKeys(pass []byte, h wire.ArchiveHeader) (cipher.AEAD, [32]byte, error) {
	master := argon2.IDKey(pass, h.Salt[:], h.Passes, h.MemoryKiB, h.Threads, 32)
	defer clear(master)
	return archiveSubkeys(master, h.ID)
}

// archiveSubkeys splits an archive's master key (Argon2id's output, or a
// keyed archive's random key) into the records' AEAD and the key check.
func archiveSubkeys(master []byte, id [16]byte) (cipher.AEAD, [32]byte, error) {
	key, err := hkdf.Key(sha256.New, master, id[:], labelArchiveKey, chacha20poly1305.KeySize)
	if err != nil {
		return nil, [32]byte{}, err
	}
	defer clear(key)
	check, err := hkdf.Key(sha256.New, master, id[:], labelArchiveCheck, 32)
	if err != nil {
		return nil, [32]byte{}, err
	}
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, [32]byte{}, err
	}
	return aead, [32]byte(check), nil
}

func archiveNonce(id [16]byte, index uint64) []byte {
	n := make([]byte, chacha20poly1305.NonceSizeX)
	copy(n, id[:])
	binary.BigEndian.PutUint64(n[16:], index)
	return n
}

func archiveAD(header []byte, index uint64, last bool) []byte {
	ad := binary.BigEndian.AppendUint64(append([]byte(nil), header...), index)
	if last {
		return append(ad, 1)
	}
	return append(ad, 0)
}

// ArchiveWriter writes an archive record by record. Records must come in
// the order of their kinds (wire.ArchiveKindAccount first, exactly once);
// Close writes the end record. The writer does not sync or rename: its
// caller makes the file appear whole at once.
type ArchiveWriter struct {
	w        *bufio.Writer
	aead     cipher.AEAD
	header   []byte
	id       [16]byte
	index    uint64
	last     wire.ArchiveKind
	messages uint64
	groups   uint32
	written  int64
	keyed    bool
	err      error
}

// NewKeyedArchiveWriter writes the header of a new keyed archive (history
// at link time) sealed under key to w, its ID from r. A keyed archive
// holds no account record: its first record may be of any kind, and it
// may hold staged messages (wire.ArchiveStaged).
func NewKeyedArchiveWriter(w io.Writer, key [32]byte, r io.Reader) (*ArchiveWriter, error) {
	return newKeyedArchiveWriter(w, key, r, wire.ArchiveKeyedVersion)
}

// newKeyedArchiveWriter is NewKeyedArchiveWriter with the header's
// version (tests write the frozen version-2 archive with it).
func newKeyedArchiveWriter(w io.Writer, key [32]byte, r io.Reader, version uint8) (*ArchiveWriter, error) {
	h := wire.ArchiveKeyedHeader{Version: version}
	if _, err := io.ReadFull(r, h.ID[:]); err != nil {
		return nil, fmt.Errorf("archive id: %w", err)
	}
	aead, check, err := archiveSubkeys(key[:], h.ID)
	if err != nil {
		return nil, err
	}
	h.Check = check
	header, err := wire.EncodeArchiveKeyedHeader(h)
	if err != nil {
		return nil, err
	}
	a := &ArchiveWriter{w: bufio.NewWriterSize(w, 64<<10), aead: aead, header: header, id: h.ID, keyed: true}
	a.write(header)
	return a, a.err
}

// NewArchiveWriter writes the header of a new archive sealed under
// passphrase to w, its salt and ID from r.
func NewArchiveWriter(w io.Writer, passphrase []byte, kdf ArchiveKDF, r io.Reader) (*ArchiveWriter, error) {
	return newArchiveWriter(w, passphrase, kdf, r, wire.ArchiveVersion)
}

// newArchiveWriter is NewArchiveWriter with the header's version (tests
// write the frozen version-1 archive with it).
func newArchiveWriter(w io.Writer, passphrase []byte, kdf ArchiveKDF, r io.Reader, version uint8) (*ArchiveWriter, error) {
	if len(passphrase) == 0 {
		return nil, errors.New("an empty backup passphrase")
	}
	h := wire.ArchiveHeader{Version: version, Passes: kdf.Passes, MemoryKiB: kdf.MemoryKiB, Threads: kdf.Threads}
	if _, err := io.ReadFull(r, h.Salt[:]); err != nil {
		return nil, fmt.Errorf("archive salt: %w", err)
	}
	if _, err := io.ReadFull(r, h.ID[:]); err != nil {
		return nil, fmt.Errorf("archive id: %w", err)
	}
	if err := wire.CheckArchiveKDF(h.Passes, h.MemoryKiB, h.Threads); err != nil {
		return nil, fmt.Errorf("archive KDF: %w", err)
	}
	aead, check, err := archiveKeys(passphrase, h)
	if err != nil {
		return nil, err
	}
	h.Check = check
	header, err := wire.EncodeArchiveHeader(h)
	if err != nil {
		return nil, err
	}
	a := &ArchiveWriter{w: bufio.NewWriterSize(w, 64<<10), aead: aead, header: header, id: h.ID}
	a.write(header)
	return a, a.err
}

// ID returns the archive's ID.
func (a *ArchiveWriter) ID() [16]byte { return a.id }

func (a *ArchiveWriter) write(b []byte) {
	if a.err != nil {
		return
	}
	n, err := a.w.Write(b)
	a.written += int64(n)
	if err != nil {
		a.err = fmt.Errorf("write archive: %w", err)
	}
}

func (a *ArchiveWriter) seal(rec wire.ArchiveRecord, last bool) {
	plain, err := wire.EncodeArchiveRecord(rec)
	if err != nil {
		a.err = fmt.Errorf("archive record %d: %w", a.index, err)
		return
	}
	sealed := a.aead.Seal(nil, archiveNonce(a.id, a.index), plain, archiveAD(a.header, a.index, last))
	clear(plain)
	a.write(binary.BigEndian.AppendUint32(nil, uint32(len(sealed))))
	a.write(sealed)
	a.index++
}

// Write seals rec as the next record.
func (a *ArchiveWriter) Write(rec wire.ArchiveRecord) error {
	if a.err != nil {
		return a.err
	}
	k := rec.ArchiveKind()
	switch {
	case k == wire.ArchiveKindEnd:
		return errors.New("archive: the end record is Close's")
	case !recordFits(a.keyed, a.index, k, a.last):
		return fmt.Errorf("archive: record of kind %d after kind %d: out of order", k, a.last)
	}
	a.last = k
	switch k {
	case wire.ArchiveKindMessage, wire.ArchiveKindMessageBy, wire.ArchiveKindGroupMessage:
		a.messages++
	case wire.ArchiveKindGroup:
		a.groups++
	}
	a.seal(rec, false)
	return a.err
}

// Written returns the bytes written so far.
func (a *ArchiveWriter) Written() int64 { return a.written }

// Close writes the end record and flushes, returning what it counts.
func (a *ArchiveWriter) Close() (wire.ArchiveEnd, error) {
	end := wire.ArchiveEnd{Records: a.index, Messages: a.messages, Groups: a.groups}
	if a.err == nil && a.index == 0 && !a.keyed {
		a.err = errors.New("archive: no account record")
	}
	a.seal(end, true)
	if a.err == nil {
		if err := a.w.Flush(); err != nil {
			a.err = fmt.Errorf("write archive: %w", err)
		}
	}
	if a.err != nil {
		return wire.ArchiveEnd{}, a.err
	}
	a.err = errors.New("archive: closed")
	return end, nil
}

// recordFits reports whether a record of kind k may come at index after
// a record of kind last: a backup starts with its account record, and
// only there; a keyed archive holds none, and only it holds staged
// messages; kinds never go back (in their order: a message naming its
// device sorts among the other one-to-one messages, wire.ArchiveKind.Order).
func recordFits(keyed bool, index uint64, k, last wire.ArchiveKind) bool {
	switch {
	case k.Order() < last.Order():
		return false
	case keyed:
		return k != wire.ArchiveKindAccount
	}
	return (index == 0) == (k == wire.ArchiveKindAccount) && k != wire.ArchiveKindStaged
}

// ArchiveReader reads the records of an archive in order, each checked
// before it is returned. Only after Next has returned io.EOF is the
// archive known whole: a caller that must not act on part of one reads it
// through first.
type ArchiveReader struct {
	r        *bufio.Reader
	aead     cipher.AEAD
	header   []byte
	h        wire.ArchiveHeader
	index    uint64
	last     wire.ArchiveKind
	messages uint64
	groups   uint32
	end      *wire.ArchiveEnd
	keyed    bool
	// sentBy: the header's version may hold kind 11 (wire.ArchiveVersion,
	// wire.ArchiveKeyedVersion); an older one may not.
	sentBy bool
	err    error
}

// OpenKeyedArchive reads a keyed archive's header from r and checks key
// against it (ErrArchivePassphrase when it does not open it). A backup's
// header is ErrArchiveVersion here.
func OpenKeyedArchive(r io.Reader, key [32]byte) (*ArchiveReader, error) {
	var hb [wire.ArchiveKeyedHeaderSize]byte
	if n, err := io.ReadFull(r, hb[:]); err != nil {
		if n >= len(wire.ArchiveMagic) && [8]byte(hb[:8]) == wire.ArchiveMagic {
			return nil, fmt.Errorf("%w: the header is cut short", ErrArchiveTruncated)
		}
		return nil, fmt.Errorf("%w: not a parley archive", ErrArchiveDamaged)
	}
	h, err := wire.DecodeArchiveKeyedHeader(hb[:])
	switch {
	case errors.Is(err, wire.ErrUnsupportedVersion):
		return nil, fmt.Errorf("%w (version %d)", ErrArchiveVersion, hb[8])
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrArchiveDamaged, err)
	}
	aead, check, err := archiveSubkeys(key[:], h.ID)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(check[:], h.Check[:]) != 1 {
		return nil, fmt.Errorf("%w: the link package's key does not open it", ErrArchiveDamaged)
	}
	return &ArchiveReader{r: bufio.NewReaderSize(r, 64<<10), aead: aead, header: hb[:], h: wire.ArchiveHeader{ID: h.ID}, keyed: true,
		sentBy: h.Version == wire.ArchiveKeyedVersion}, nil
}

// OpenArchive reads an archive's header from r and checks passphrase
// against it. Parameters above limit (zero: wire's bounds) are refused as
// damage before any work: a caller that knows its archives (a fuzz test)
// bounds the KDF it will run.
func OpenArchive(r io.Reader, passphrase []byte, limit ArchiveKDF) (*ArchiveReader, error) {
	var hb [wire.ArchiveHeaderSize]byte
	if n, err := io.ReadFull(r, hb[:]); err != nil {
		if n >= len(wire.ArchiveMagic) && [8]byte(hb[:8]) == wire.ArchiveMagic {
			return nil, fmt.Errorf("%w: the header is cut short", ErrArchiveTruncated)
		}
		return nil, fmt.Errorf("%w: not a parley archive", ErrArchiveDamaged)
	}
	h, err := wire.DecodeArchiveHeader(hb[:])
	switch {
	case errors.Is(err, wire.ErrUnsupportedVersion):
		return nil, fmt.Errorf("%w (version %d)", ErrArchiveVersion, hb[8])
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrArchiveDamaged, err)
	}
	if k := (ArchiveKDF{Passes: h.Passes, MemoryKiB: h.MemoryKiB, Threads: h.Threads}); k.Exceeds(limit) {
		return nil, &ArchiveKDFError{Header: k, Limit: limit}
	}
	aead, check, err := archiveKeys(passphrase, h)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(check[:], h.Check[:]) != 1 {
		return nil, ErrArchivePassphrase
	}
	return &ArchiveReader{r: bufio.NewReaderSize(r, 64<<10), aead: aead, header: hb[:], h: h, sentBy: h.Version == wire.ArchiveVersion}, nil
}

// Header returns the archive's header.
func (a *ArchiveReader) Header() wire.ArchiveHeader { return a.h }

// Index returns the index of the record Next returned last.
func (a *ArchiveReader) Index() uint64 { return a.index - 1 }

// End returns the end record once Next has returned io.EOF.
func (a *ArchiveReader) End() (wire.ArchiveEnd, bool) {
	if a.end == nil {
		return wire.ArchiveEnd{}, false
	}
	return *a.end, true
}

func (a *ArchiveReader) fail(err error) error {
	a.err = err
	return err
}

// Next returns the next record, or io.EOF after the end record, checked
// against what came before and followed by nothing.
func (a *ArchiveReader) Next() (wire.ArchiveRecord, error) {
	if a.err != nil {
		return nil, a.err
	}
	if a.end != nil {
		return nil, io.EOF
	}
	var lb [4]byte
	if n, err := io.ReadFull(a.r, lb[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, a.fail(fmt.Errorf("%w: %d records and no end", ErrArchiveTruncated, a.index))
		}
		return nil, a.fail(fmt.Errorf("%w: record %d: %v", ErrArchiveTruncated, a.index, err))
	}
	n := binary.BigEndian.Uint32(lb[:])
	if n < chacha20poly1305.Overhead+1 || n > maxArchiveSealed {
		return nil, a.fail(fmt.Errorf("%w: record %d of %d bytes", ErrArchiveDamaged, a.index, n))
	}
	sealed := make([]byte, n)
	if _, err := io.ReadFull(a.r, sealed); err != nil {
		return nil, a.fail(fmt.Errorf("%w: record %d: %v", ErrArchiveTruncated, a.index, err))
	}
	nonce := archiveNonce(a.h.ID, a.index)
	plain, err := a.aead.Open(nil, nonce, sealed, archiveAD(a.header, a.index, false))
	last := false
	if err != nil {
		if plain, err = a.aead.Open(nil, nonce, sealed, archiveAD(a.header, a.index, true)); err != nil {
			return nil, a.fail(fmt.Errorf("%w: record %d does not open", ErrArchiveDamaged, a.index))
		}
		last = true
	}
	rec, err := wire.DecodeArchiveRecord(plain)
	if err != nil {
		return nil, a.fail(fmt.Errorf("%w: record %d: %v", ErrArchiveDamaged, a.index, err))
	}
	k := rec.ArchiveKind()
	switch {
	case last != (k == wire.ArchiveKindEnd):
		return nil, a.fail(fmt.Errorf("%w: record %d is misplaced", ErrArchiveDamaged, a.index))
	case k == wire.ArchiveKindMessageBy && !a.sentBy:
		return nil, a.fail(fmt.Errorf("%w: record %d (kind %d) in an archive of a version without it", ErrArchiveDamaged, a.index, k))
	case k != wire.ArchiveKindEnd && !recordFits(a.keyed, a.index, k, a.last):
		return nil, a.fail(fmt.Errorf("%w: record %d (kind %d) out of order", ErrArchiveDamaged, a.index, k))
	}
	a.index++
	a.last = k
	switch r := rec.(type) {
	case wire.ArchiveMessage, wire.ArchiveGroupMessage:
		a.messages++
	case wire.ArchiveGroup:
		a.groups++
	case wire.ArchiveEnd:
		if r != (wire.ArchiveEnd{Records: a.index - 1, Messages: a.messages, Groups: a.groups}) || (a.index == 1 && !a.keyed) {
			return nil, a.fail(fmt.Errorf("%w: the end record does not count what came before", ErrArchiveDamaged))
		}
		if _, err := a.r.ReadByte(); err == nil {
			return nil, a.fail(fmt.Errorf("%w: bytes after the end record", ErrArchiveDamaged))
		}
		a.end = &r
		return nil, io.EOF
	}
	return rec, nil
}
