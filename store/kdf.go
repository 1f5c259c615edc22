package store

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/crypto/argon2"

	"github.com/parley-chat/parley/engine"
)

// KDFParams are the Argon2id parameters that derive the key wrapping a
// profile's storage key from its passphrase.
type KDFParams struct {
	Time      uint32 // passes over memory, at least 1
	MemoryKiB uint32 // memory in KiB; Argon2 raises it to 8*Threads if lower
	Threads   uint8  // lanes, at least 1
}

// defaultKDF is what a profile uses unless its creator chose otherwise
// (Options.KDF left zero; parley init --kdf-memory and --kdf-passes).
var defaultKDF = KDFParams{Time: 3, MemoryKiB: 64 * 1024, Threads: 2}

// DefaultKDF returns the parameters a profile gets when Options.KDF is zero.
func DefaultKDF() KDFParams { return defaultKDF }

// CheckKDF says why p cannot seal a profile, or nil when it can: at least
// one pass, at least 1 KiB of memory and one thread, and within the limits
// an open accepts from a profile's file.
func CheckKDF(p KDFParams) error { return p.validate() }

// Limits on parameters read back from a profile. The parameters are stored in
// clear; a tampered file must not make an open run for hours or exhaust
// memory before the passphrase check fails.
const (
	maxKDFTime      = 64
	maxKDFMemoryKiB = 4 << 20 // 4 GiB
)

const (
	kdfAlgArgon2id = 1
	kdfSaltSize    = 16
	// kdf record: alg u8 | time u32 | memory KiB u32 | threads u8 | salt[16]
	kdfRecordSize = 1 + 4 + 4 + 1 + kdfSaltSize
)

// kdfRecord is the KDF choice stored in meta under "kdf".
type kdfRecord struct {
	params KDFParams
	salt   [kdfSaltSize]byte
}

func newKDFRecord(p KDFParams) (kdfRecord, error) {
	if err := p.validate(); err != nil {
		return kdfRecord{}, err
	}
	r := kdfRecord{params: p}
	if _, err := rand.Read(r.salt[:]); err != nil {
		return kdfRecord{}, fmt.Errorf("read salt: %w", err)
	}
	return r, nil
}

func (p KDFParams) validate() error {
	switch {
	case p.Time < 1 || p.Time > maxKDFTime:
		return fmt.Errorf("kdf time %d out of range 1..%d", p.Time, maxKDFTime)
	case p.MemoryKiB < 1 || p.MemoryKiB > maxKDFMemoryKiB:
		return fmt.Errorf("kdf memory %d KiB out of range 1..%d", p.MemoryKiB, maxKDFMemoryKiB)
	case p.Threads < 1:
		return errors.New("kdf threads must be at least 1")
	}
	return nil
}

func (r kdfRecord) encode() []byte {
	b := make([]byte, 0, kdfRecordSize)
	b = append(b, kdfAlgArgon2id)
	b = binary.BigEndian.AppendUint32(b, r.params.Time)
	b = binary.BigEndian.AppendUint32(b, r.params.MemoryKiB)
	b = append(b, r.params.Threads)
	return append(b, r.salt[:]...)
}

func decodeKDFRecord(b []byte) (kdfRecord, error) {
	if len(b) != kdfRecordSize {
		return kdfRecord{}, fmt.Errorf("%w: kdf record is %d bytes, want %d", engine.ErrMalformedState, len(b), kdfRecordSize)
	}
	if b[0] != kdfAlgArgon2id {
		return kdfRecord{}, fmt.Errorf("%w: kdf algorithm %d", engine.ErrUnsupportedStateVersion, b[0])
	}
	var r kdfRecord
	r.params.Time = binary.BigEndian.Uint32(b[1:5])
	r.params.MemoryKiB = binary.BigEndian.Uint32(b[5:9])
	r.params.Threads = b[9]
	copy(r.salt[:], b[10:])
	if err := r.params.validate(); err != nil {
		return kdfRecord{}, fmt.Errorf("%w: %v", engine.ErrMalformedState, err)
	}
	return r, nil
}

// wrappingSealer derives the key-wrapping key from the passphrase. This is
// the one slow step of an open.
func (r kdfRecord) wrappingSealer(passphrase []byte) *sealer {
	kek := argon2.IDKey(passphrase, r.salt[:], r.params.Time, r.params.MemoryKiB, r.params.Threads, storageKeySize)
	defer clear(kek)
	s, err := newSealer(kek)
	if err != nil {
		panic(err) // the key size is ours
	}
	return s
}

// wrapStorageKey seals the storage key under the passphrase key.
func wrapStorageKey(kek *sealer, key []byte) []byte {
	return kek.seal(kindStorageKey, nil, key)
}

// unwrapStorageKey opens the wrapped storage key; any failure is a wrong
// passphrase (or a tampered wrap or KDF record, which looks the same).
func unwrapStorageKey(kek *sealer, wrapped []byte) ([]byte, error) {
	key, err := kek.open(kindStorageKey, nil, wrapped)
	if err != nil || len(key) != storageKeySize {
		return nil, engine.ErrWrongPassphrase
	}
	return key, nil
}
