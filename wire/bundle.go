package wire

import (
	"encoding/binary"
	"fmt"
)

const (
	// BundleVersion is the only prekey bundle version.
	BundleVersion = 1
	// KEMPublicKeySize is the size of an ML-KEM-768 encapsulation key.
	KEMPublicKeySize = 1184
	// MaxBundleSize is the largest encoded bundle: an address of
	// MaxAddressSize and a one-time prekey.
	MaxBundleSize = bundleFixedSize + MaxAddressSize + oneTimePreKeySize

	signedPreKeySize  = 4 + 8 + 8 + 32 + 64
	kemPreKeySize     = 4 + 8 + 8 + KEMPublicKeySize + 64
	oneTimePreKeySize = 4 + 32
	// bundleFixedSize is a bundle without address bytes and one-time prekey.
	bundleFixedSize = 1 + 1 + 32 + 32 + 64 + signedPreKeySize + kemPreKeySize + 1
)

// SignedPreKeyPublic is the public half of a signed X25519 prekey. Created
// and Expires are Unix seconds; the engine defines the signed message.
type SignedPreKeyPublic struct {
	ID        uint32
	Created   int64
	Expires   int64
	PublicKey [32]byte
	Signature [64]byte
}

// KEMPreKeyPublic is the public half of a signed ML-KEM-768 prekey. Created
// and Expires are Unix seconds; the engine defines the signed message.
type KEMPreKeyPublic struct {
	ID        uint32
	Created   int64
	Expires   int64
	PublicKey [KEMPublicKeySize]byte
	Signature [64]byte
}

// OneTimePreKeyPublic is an unsigned X25519 one-time prekey, which the relay
// hands out once.
type OneTimePreKeyPublic struct {
	ID        uint32
	PublicKey [32]byte
}

// Bundle is what an initiator fetches from the relay to start a session with
// the device at Address.
type Bundle struct {
	Address            string
	IdentitySigningKey [32]byte // Ed25519
	IdentityDHKey      [32]byte // X25519
	IdentitySignature  [64]byte // by the signing key over the DH key (engine defines the message)
	SignedPreKey       SignedPreKeyPublic
	KEMPreKey          KEMPreKeyPublic
	OneTimePreKey      *OneTimePreKeyPublic // at most one; nil when the relay has none left
}

// EncodeBundle returns the bundle's bytes. An invalid address or a prekey
// created after it expires fail with ErrMalformed.
func EncodeBundle(b Bundle) ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, fmt.Errorf("wire: encode bundle: %w", err)
	}
	return b.append(make([]byte, 0, b.size())), nil
}

func (b *Bundle) check() error {
	if err := checkAddress(b.Address); err != nil {
		return err
	}
	return checkLifetimes(b)
}

func checkLifetimes(b *Bundle) error {
	if b.SignedPreKey.Created > b.SignedPreKey.Expires {
		return fmt.Errorf("signed prekey created %d after it expires %d: %w", b.SignedPreKey.Created, b.SignedPreKey.Expires, ErrMalformed)
	}
	if b.KEMPreKey.Created > b.KEMPreKey.Expires {
		return fmt.Errorf("KEM prekey created %d after it expires %d: %w", b.KEMPreKey.Created, b.KEMPreKey.Expires, ErrMalformed)
	}
	return nil
}

func (b *Bundle) size() int {
	n := bundleFixedSize + len(b.Address)
	if b.OneTimePreKey != nil {
		n += oneTimePreKeySize
	}
	return n
}

func (b *Bundle) append(p []byte) []byte {
	p = append(p, BundleVersion)
	p = appendAddress(p, b.Address)
	p = append(p, b.IdentitySigningKey[:]...)
	p = append(p, b.IdentityDHKey[:]...)
	p = append(p, b.IdentitySignature[:]...)
	s := &b.SignedPreKey
	p = binary.BigEndian.AppendUint32(p, s.ID)
	p = binary.BigEndian.AppendUint64(p, uint64(s.Created))
	p = binary.BigEndian.AppendUint64(p, uint64(s.Expires))
	p = append(p, s.PublicKey[:]...)
	p = append(p, s.Signature[:]...)
	k := &b.KEMPreKey
	p = binary.BigEndian.AppendUint32(p, k.ID)
	p = binary.BigEndian.AppendUint64(p, uint64(k.Created))
	p = binary.BigEndian.AppendUint64(p, uint64(k.Expires))
	p = append(p, k.PublicKey[:]...)
	p = append(p, k.Signature[:]...)
	if b.OneTimePreKey == nil {
		return append(p, 0)
	}
	return appendOneTimePreKey(append(p, 1), *b.OneTimePreKey)
}

func appendOneTimePreKey(p []byte, k OneTimePreKeyPublic) []byte {
	p = binary.BigEndian.AppendUint32(p, k.ID)
	return append(p, k.PublicKey[:]...)
}

func (r *reader) oneTimePreKey(k *OneTimePreKeyPublic) {
	k.ID = r.u32("one-time prekey ID")
	r.array(k.PublicKey[:], "one-time prekey")
}

// DecodeBundle parses one bundle. It rejects, in this order: input longer
// than MaxBundleSize (ErrMessageTooLarge); a version other than BundleVersion
// (ErrUnsupportedVersion); truncation, an invalid address, a one-time prekey
// flag other than 0 or 1, trailing bytes or a prekey created after it
// expires (ErrMalformed).
func DecodeBundle(b []byte) (Bundle, error) {
	bd, err := decodeBundle(b)
	if err != nil {
		return Bundle{}, fmt.Errorf("wire: decode bundle: %w", err)
	}
	return bd, nil
}

func decodeBundle(b []byte) (Bundle, error) {
	if len(b) > MaxBundleSize {
		return Bundle{}, fmt.Errorf("%d bytes over %d: %w", len(b), MaxBundleSize, ErrMessageTooLarge)
	}
	r := reader{b: b}
	r.version(BundleVersion)
	var bd Bundle
	bd.Address = r.address("address")
	r.array(bd.IdentitySigningKey[:], "identity signing key")
	r.array(bd.IdentityDHKey[:], "identity DH key")
	r.array(bd.IdentitySignature[:], "identity signature")
	s := &bd.SignedPreKey
	s.ID = r.u32("signed prekey ID")
	s.Created = r.i64("signed prekey created")
	s.Expires = r.i64("signed prekey expires")
	r.array(s.PublicKey[:], "signed prekey")
	r.array(s.Signature[:], "signed prekey signature")
	k := &bd.KEMPreKey
	k.ID = r.u32("KEM prekey ID")
	k.Created = r.i64("KEM prekey created")
	k.Expires = r.i64("KEM prekey expires")
	r.array(k.PublicKey[:], "KEM prekey")
	r.array(k.Signature[:], "KEM prekey signature")
	if r.flag("one-time prekey flag") {
		bd.OneTimePreKey = new(OneTimePreKeyPublic)
		r.oneTimePreKey(bd.OneTimePreKey)
	}
	if err := r.end(); err != nil {
		return Bundle{}, err
	}
	if err := checkLifetimes(&bd); err != nil {
		return Bundle{}, err
	}
	return bd, nil
}
