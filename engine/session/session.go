package session

import (
	"bytes"
	"crypto/hkdf"
	"crypto/mlkem"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine/session/internal/x25519"
	"github.com/parley-chat/parley/wire"
)

const (
	labelInitiationID = "parley/v1/initiation-id"
	labelSessionRoot  = "parley/v1/session-root"
)

// InitiationID identifies one session initiation: a domain-separated SHA-256
// digest of its public parameters. IDs compare as unsigned bytes; the order
// only breaks collision ties and says nothing about age.
type InitiationID [32]byte

// Compare orders two IDs as unsigned bytes.
func (id InitiationID) Compare(o InitiationID) int { return bytes.Compare(id[:], o[:]) }

// Session is an established (or half-established) Double Ratchet session with
// one peer device. Methods that change it are meant for a candidate copy
// (Clone) whose result the store commits; the live value is replaced only
// after that commit.
type Session struct {
	// ID is the initiation this session came from.
	ID InitiationID
	// PeerIdentity is the identity the session is authenticated to.
	PeerIdentity IdentityKey
	// Initiator is true on the side that fetched the bundle.
	Initiator bool
	// AwaitingReply is true on the initiator until it decrypts anything on
	// the session; until then every message it sends is a PreKeyMessage.
	AwaitingReply bool
	// SignedPreKeyID is the responder's signed prekey the initiation used;
	// a retired initiation is forgotten when that prekey is deleted.
	SignedPreKeyID uint32
	// Initiation is the header the initiator repeats on each PreKeyMessage.
	Initiation *wire.InitiationHeader

	r *ratchet
}

func (s *Session) setID(id InitiationID) { s.ID = id }

// messageAD is the associated data of one message, before its header: a label,
// the initiation ID (which binds both identities and addresses), and the
// envelope's type and ID, so that a relay can neither relabel a ciphertext nor
// move it to another envelope.
//
// It is built in the ratchet's own buffer, with room for the header that
// encrypt and decrypt append, so that a message allocates no AD: a session
// (and its ratchet) is never used by two goroutines at once, and a clone
// copies the buffer.
func (s *Session) messageAD(typ wire.EnvelopeType, envID wire.EnvelopeID) []byte {
	ad := s.r.ad[:0]
	ad = append(ad, labelMessageAD...)
	ad = append(ad, s.ID[:]...)
	ad = append(ad, byte(typ))
	return append(ad, envID[:]...)
}

// SendingCount is how many messages the current sending chain carried: the
// sending window's measure (package engine never encrypts past its bound).
func (s *Session) SendingCount() uint32 { return s.r.ns }

// SendingKey is this device's ratchet public key of the current sending
// chain: what a peer's recovery request names.
func (s *Session) SendingKey() [32]byte { return s.r.dhsPub }

// Clone returns a deep copy to prepare a transition on.
func (s *Session) Clone() *Session {
	c := *s
	if s.Initiation != nil {
		h := *s.Initiation
		c.Initiation = &h
	}
	c.r = s.r.clone()
	return &c
}

// EnvelopeType is the type of the next envelope Encrypt makes: a
// PreKeyMessage while the initiator awaits its first reply, otherwise a
// RatchetMessage.
func (s *Session) EnvelopeType() wire.EnvelopeType {
	if s.Initiator && s.AwaitingReply {
		return wire.EnvelopePreKey
	}
	return wire.EnvelopeRatchet
}

// Encrypt encrypts one plaintext (a frame) for the envelope envID and returns
// the envelope type and payload.
func (s *Session) Encrypt(envID wire.EnvelopeID, plaintext []byte) (wire.EnvelopeType, []byte, error) {
	typ := s.EnvelopeType()
	m, encoded := s.r.encrypt(s.messageAD(typ, envID), envID, plaintext)
	if typ == wire.EnvelopePreKey {
		b, err := wire.EncodePreKeyMessage(wire.PreKeyMessage{Initiation: *s.Initiation, Message: m})
		return typ, b, err
	}
	if len(encoded) > wire.MaxPayloadSize {
		return 0, nil, wire.ErrMessageTooLarge
	}
	return typ, encoded, nil
}

// Decrypt authenticates and decrypts the ratchet message m of an envelope of
// type typ and ID envID on this session. It changes the session only when it
// succeeds.
func (s *Session) Decrypt(r Randomness, typ wire.EnvelopeType, envID wire.EnvelopeID, m wire.RatchetMessage) ([]byte, error) {
	pt, err := s.r.decrypt(s.messageAD(typ, envID), envID, m, func() (*x25519.Key, error) { return x25519.New(r) })
	if err != nil {
		return nil, err
	}
	if s.Initiator {
		s.AwaitingReply = false
	}
	return pt, nil
}

// ReceivingKey returns the peer's ratchet key of the receiving chain; nil
// before the session received anything.
func (s *Session) ReceivingKey() *[32]byte {
	if !s.r.hasDHR {
		return nil
	}
	k := s.r.dhr
	return &k
}

// HasSkipped reports whether the session kept skipped message keys of the
// chain of the peer's ratchet key.
func (s *Session) HasSkipped(key [32]byte) bool {
	for k := range s.r.skipped {
		if k.ratchetKey == key {
			return true
		}
	}
	return false
}

// initiationID computes the ID over both addresses, both identities (with the
// initiator's identity signature, which travels in the header), the ephemeral
// key, the prekey IDs, the KEM ciphertext and the initiation it replaces.
func initiationID(initiator string, initiatorKey IdentityKey, responder string, responderKey IdentityKey, h *wire.InitiationHeader) InitiationID {
	d := sha256.New()
	d.Write([]byte(labelInitiationID))
	for _, a := range []string{initiator, responder} {
		d.Write([]byte{byte(len(a))})
		d.Write([]byte(a))
	}
	d.Write(initiatorKey.SigningKey[:])
	d.Write(initiatorKey.DHKey[:])
	d.Write(initiatorKey.Signature[:])
	d.Write(responderKey.SigningKey[:])
	d.Write(responderKey.DHKey[:])
	d.Write(h.EphemeralKey[:])
	var ids [13]byte
	binary.BigEndian.PutUint32(ids[0:], h.SignedPreKeyID)
	binary.BigEndian.PutUint32(ids[4:], h.KEMPreKeyID)
	if h.HasOneTimePreKey {
		ids[8] = 1
		binary.BigEndian.PutUint32(ids[9:], h.OneTimePreKeyID)
	}
	d.Write(ids[:])
	d.Write(h.KEMCiphertext[:])
	// An initiation that replaces another names it; one that does not
	// digests exactly as before the field existed.
	if h.Replaces != ([32]byte{}) {
		d.Write(h.Replaces[:])
	}
	var id InitiationID
	d.Sum(id[:0])
	return id
}

// sessionRoot folds every Diffie-Hellman output and the ML-KEM shared secret
// into one HKDF-SHA256 derivation: 32 bytes of 0xFF, then DH1..DH4 and the
// KEM secret as input keying material, a zero salt, and the label with the
// initiation ID as info.
func sessionRoot(dhs [][]byte, kemSecret []byte, id InitiationID) [32]byte {
	ikm := bytes.Repeat([]byte{0xff}, 32)
	for _, d := range dhs {
		ikm = append(ikm, d...)
	}
	ikm = append(ikm, kemSecret...)
	out, err := hkdf.Key(sha256.New, ikm, make([]byte, 32), labelSessionRoot+string(id[:]), 32)
	if err != nil {
		panic("engine: hkdf: " + err.Error())
	}
	var root [32]byte
	copy(root[:], out)
	return root
}

// Initiate starts a session from a verified peer bundle: X3DH over X25519
// (identity, signed prekey, ephemeral and, when the bundle has one, one-time
// prekey) plus one ML-KEM-768 encapsulation to the peer's signed KEM prekey.
func Initiate(r Randomness, self string, id *Identity, bundle wire.Bundle, now time.Time) (*Session, error) {
	return InitiateReplacing(r, self, id, bundle, now, InitiationID{})
}

// InitiateReplacing is Initiate for a session that deliberately replaces the
// peer's session replaces (see DecidePreKeyMessage): the initiation names it,
// so that the peer accepts it in place of an established session.
func InitiateReplacing(r Randomness, self string, id *Identity, bundle wire.Bundle, now time.Time, replaces InitiationID) (*Session, error) {
	peer, peerKey, err := VerifyBundle(bundle, now)
	if err != nil {
		return nil, err
	}
	ek, err := x25519.New(r)
	if err != nil {
		return nil, err
	}
	kemKey, err := mlkem.NewEncapsulationKey768(bundle.KEMPreKey.PublicKey[:])
	if err != nil {
		return nil, fmt.Errorf("initiate with %s: kem prekey: %w", peer, ErrBadSignature)
	}
	kemSecret, kemCT, err := r.Encapsulate(kemKey)
	if err != nil {
		return nil, fmt.Errorf("initiate with %s: %w", peer, err)
	}
	spk := bundle.SignedPreKey.PublicKey[:]
	h := &wire.InitiationHeader{
		IdentitySigningKey: id.public.SigningKey,
		IdentityDHKey:      id.public.DHKey,
		IdentitySignature:  id.public.Signature,
		SignedPreKeyID:     bundle.SignedPreKey.ID,
		KEMPreKeyID:        bundle.KEMPreKey.ID,
		Replaces:           replaces,
	}
	copy(h.EphemeralKey[:], pubOf(ek))
	copy(h.KEMCiphertext[:], kemCT)

	dh1, err1 := dh(id.dh, spk)
	dh2, err2 := dh(ek, peerKey.DHKey[:])
	dh3, err3 := dh(ek, spk)
	parts := [][]byte{dh1, dh2, dh3}
	var err4 error
	if otk := bundle.OneTimePreKey; otk != nil {
		h.HasOneTimePreKey, h.OneTimePreKeyID = true, otk.ID
		var dh4 []byte
		dh4, err4 = dh(ek, otk.PublicKey[:])
		parts = append(parts, dh4)
	}
	for _, e := range []error{err1, err2, err3, err4} {
		if e != nil {
			return nil, fmt.Errorf("initiate with %s: bad prekey: %w", peer, ErrBadSignature)
		}
	}

	s := &Session{PeerIdentity: peerKey, Initiator: true, AwaitingReply: true, SignedPreKeyID: h.SignedPreKeyID, Initiation: h}
	s.setID(initiationID(self, id.public, peer, peerKey, h))
	root := sessionRoot(parts, kemSecret, s.ID)

	rk, err := x25519.New(r)
	if err != nil {
		return nil, err
	}
	out, err := dh(rk, spk)
	if err != nil {
		return nil, fmt.Errorf("initiate with %s: bad prekey: %w", peer, ErrBadSignature)
	}
	s.r = &ratchet{dhr: bundle.SignedPreKey.PublicKey, hasDHR: true, hasCKS: true}
	s.r.setDHS(rk)
	s.r.root, s.r.cks = kdfRoot(&root, out)
	return s, nil
}

// ResponderKeys are the private prekeys an incoming initiation names.
type ResponderKeys struct {
	SignedPreKey  *SignedPreKey
	KEMPreKey     *KEMPreKey
	OneTimePreKey *OneTimePreKey // nil when the initiation used none
}

// InitiationIdentity returns the initiator's identity key from a header.
func InitiationIdentity(h *wire.InitiationHeader) IdentityKey {
	return IdentityKey{SigningKey: h.IdentitySigningKey, DHKey: h.IdentityDHKey, Signature: h.IdentitySignature}
}

// IncomingInitiationID computes the ID of an incoming initiation without any
// Diffie-Hellman work, so that the decision of DecidePreKeyMessage can be made
// before it.
func IncomingInitiationID(self string, id *Identity, peer string, h *wire.InitiationHeader) InitiationID {
	return initiationID(peer, InitiationIdentity(h), self, id.public, h)
}

// Respond builds the responder's side of a session from an initiation header.
// It checks the initiator's identity signature and the prekeys' expiry; the
// caller has already matched the prekey IDs to keys it holds. The session
// starts with no chains: its first decrypt performs the first ratchet step.
func Respond(self string, id *Identity, peer string, h *wire.InitiationHeader, keys ResponderKeys, now time.Time) (*Session, error) {
	peerKey := InitiationIdentity(h)
	if err := peerKey.Verify(); err != nil {
		return nil, fmt.Errorf("initiation from %s: %w", peer, err)
	}
	if keys.SignedPreKey == nil || keys.KEMPreKey == nil || keys.SignedPreKey.ID != h.SignedPreKeyID || keys.KEMPreKey.ID != h.KEMPreKeyID {
		return nil, fmt.Errorf("initiation from %s: %w", peer, ErrUnknownPreKey)
	}
	if now.Unix() >= keys.SignedPreKey.Expires || now.Unix() >= keys.KEMPreKey.Expires {
		return nil, fmt.Errorf("initiation from %s: %w", peer, ErrExpiredSignedPreKey)
	}
	if h.HasOneTimePreKey != (keys.OneTimePreKey != nil) || keys.OneTimePreKey != nil && keys.OneTimePreKey.ID != h.OneTimePreKeyID {
		return nil, fmt.Errorf("initiation from %s: %w", peer, ErrUnknownPreKey)
	}
	kemSecret, err := keys.KEMPreKey.key.Decapsulate(h.KEMCiphertext[:])
	if err != nil {
		return nil, ErrDecrypt
	}
	spk := keys.SignedPreKey.key
	dh1, err1 := dh(spk, h.IdentityDHKey[:])
	dh2, err2 := dh(id.dh, h.EphemeralKey[:])
	dh3, err3 := dh(spk, h.EphemeralKey[:])
	parts := [][]byte{dh1, dh2, dh3}
	var err4 error
	if keys.OneTimePreKey != nil {
		var dh4 []byte
		dh4, err4 = dh(keys.OneTimePreKey.key, h.EphemeralKey[:])
		parts = append(parts, dh4)
	}
	for _, e := range []error{err1, err2, err3, err4} {
		if e != nil {
			return nil, e
		}
	}
	s := &Session{PeerIdentity: peerKey, SignedPreKeyID: h.SignedPreKeyID}
	s.setID(initiationID(peer, peerKey, self, id.public, h))
	s.r = &ratchet{root: sessionRoot(parts, kemSecret, s.ID)}
	s.r.setDHS(spk)
	return s, nil
}
