package session

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"fmt"

	"github.com/parley-chat/parley/engine/session/internal/x25519"
	"github.com/parley-chat/parley/wire"
)

// Skipped-key bounds. A message may skip at most MaxSkip message keys of one
// chain (a larger jump is rejected and changes nothing), and a session keeps at
// most MaxSkippedKeys skipped keys in all; beyond that the oldest are dropped,
// and the messages they belonged to can no longer be decrypted (their senders'
// retries re-encrypt them on the current chain).
const (
	MaxSkip        = 1000
	MaxSkippedKeys = 2000
)

const (
	labelRatchetRoot = "parley/v1/ratchet-root"
	labelMessageAD   = "parley/v2/message"
	labelEnvelopeKey = "parley/v2/envelope-key"
)

// kdfRoot is the root KDF: HKDF-SHA256 (RFC 5869) with the root key as salt,
// a DH output as input keying material and labelRatchetRoot as info, giving a
// new root key and a chain key. It runs on stack buffers (TestKDFRoot checks
// it against crypto/hkdf).
func kdfRoot(rk *[32]byte, dhOut []byte) (root, chain [32]byte) {
	prk := hmacSHA256(rk, dhOut)
	var msg [32 + len(labelRatchetRoot) + 1]byte
	n := copy(msg[:], labelRatchetRoot)
	msg[n] = 1
	root = hmacSHA256(&prk, msg[:n+1])
	copy(msg[:], root[:])
	copy(msg[32:], labelRatchetRoot)
	msg[len(msg)-1] = 2
	chain = hmacSHA256(&prk, msg[:])
	return
}

// messageKey is the key of one chain position. It is never used as an AES
// key itself: envelopeKey derives the AES-256-GCM key and nonce of one
// encryption from it and the envelope's random ID (the nonce field is
// unused since version 2 and kept zero in stored skipped keys).
type messageKey struct {
	key   [32]byte
	nonce [12]byte
}

// chainStep advances a chain key with HMAC-SHA256 under the chain key: input
// 0x01 gives the position's message key and 0x02 the next chain key.
func chainStep(ck *[32]byte) (mk messageKey, next [32]byte) {
	mk.key = hmacByte(ck, 1)
	next = hmacByte(ck, 2)
	return
}

// envelopeKey derives the AES-256-GCM key and nonce of one encryption from a
// position's message key and the envelope's ID, which is random and new for
// every encryption: HMAC-SHA256 under the message key of labelEnvelopeKey,
// a byte 0x01 (key) or 0x02 (nonce, first 12 bytes), and the envelope ID. A
// profile restored from a copy re-derives the same chain positions, but
// never the same key and nonce for a new plaintext.
func envelopeKey(mk *messageKey, envID wire.EnvelopeID) (key [32]byte, nonce [12]byte) {
	var msg [len(labelEnvelopeKey) + 1 + len(envID)]byte
	n := copy(msg[:], labelEnvelopeKey)
	copy(msg[n+1:], envID[:])
	msg[n] = 1
	key = hmacSHA256(&mk.key, msg[:])
	msg[n] = 2
	full := hmacSHA256(&mk.key, msg[:])
	copy(nonce[:], full[:12])
	return
}

// hmacByte is HMAC-SHA256 of a one-byte message under a 32-byte key.
func hmacByte(key *[32]byte, msg byte) [32]byte {
	return hmacSHA256(key, []byte{msg})
}

// maxHMACMessage bounds hmacSHA256's message so that it fits a stack buffer.
const maxHMACMessage = 128

// hmacSHA256 is HMAC-SHA256 (RFC 2104) under a 32-byte key, for messages of at
// most maxHMACMessage bytes, computed on stack buffers: chain and root steps
// run for every message, and crypto/hmac allocates several objects per key.
// TestHMACSHA256 checks it against crypto/hmac.
func hmacSHA256(key *[32]byte, msg []byte) [32]byte {
	if len(msg) > maxHMACMessage {
		panic("engine: hmacSHA256 message too long")
	}
	var in [64 + maxHMACMessage]byte
	var out [64 + 32]byte
	for i := 0; i < 32; i++ {
		in[i] = key[i] ^ 0x36
		out[i] = key[i] ^ 0x5c
	}
	for i := 32; i < 64; i++ {
		in[i] = 0x36
		out[i] = 0x5c
	}
	n := copy(in[64:], msg)
	inner := sha256.Sum256(in[:64+n])
	copy(out[64:], inner[:])
	return sha256.Sum256(out[:])
}

// newAEAD returns AES-256-GCM under key.
func newAEAD(key *[32]byte) cipher.AEAD {
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic("engine: aes: " + err.Error())
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("engine: gcm: " + err.Error())
	}
	return aead
}

type skippedKey struct {
	ratchetKey [32]byte
	n          uint32
}

// ratchet is the Double Ratchet state of one session.
type ratchet struct {
	root   [32]byte
	dhs    *x25519.Key // own ratchet key
	dhsPub [32]byte
	dhr    [32]byte // peer's ratchet key; valid when hasDHR
	hasDHR bool
	cks    [32]byte // sending chain; valid when hasCKS
	hasCKS bool
	ns     uint32
	ckr    [32]byte // receiving chain; valid when hasCKR
	hasCKR bool
	nr     uint32
	pn     uint32

	skipped map[skippedKey]messageKey
	order   []skippedKey // insertion order, oldest first, for eviction

	// ad is scratch space for a message's associated data
	// (Session.messageAD), never part of the state.
	ad [len(labelMessageAD) + 32 + 1 + 16 + wire.RatchetHeaderSize]byte
}

func (r *ratchet) setDHS(k *x25519.Key) {
	r.dhs = k
	copy(r.dhsPub[:], pubOf(k))
}

// clone returns a deep copy.
func (r *ratchet) clone() *ratchet {
	c := *r
	if r.skipped != nil {
		c.skipped = make(map[skippedKey]messageKey, len(r.skipped))
		for k, v := range r.skipped {
			c.skipped[k] = v
		}
		c.order = append([]skippedKey(nil), r.order...)
	}
	return &c
}

// encrypt encrypts plaintext on the sending chain. The associated data is
// adPrefix (which binds the session and the envelope) followed by the header.
//
// It returns the message and its encoding (the header followed by the
// ciphertext, as wire lays out a ratchet message), built in one buffer whose
// tail is the message's Ciphertext.
func (r *ratchet) encrypt(adPrefix []byte, envID wire.EnvelopeID, plaintext []byte) (wire.RatchetMessage, []byte) {
	mk, next := chainStep(&r.cks)
	h := wire.RatchetHeader{RatchetKey: r.dhsPub, PreviousChainLength: r.pn, MessageNumber: r.ns}
	r.cks = next
	r.ns++
	ad, _ := h.AppendBinary(adPrefix)
	key, nonce := envelopeKey(&mk, envID)
	aead := newAEAD(&key)
	buf := make([]byte, 0, wire.RatchetHeaderSize+len(plaintext)+aead.Overhead())
	buf, _ = h.AppendBinary(buf)
	buf = aead.Seal(buf, nonce[:], plaintext, ad)
	return wire.RatchetMessage{Header: h, Ciphertext: buf[wire.RatchetHeaderSize:]}, buf
}

// decrypt authenticates and decrypts m. It changes r only when it succeeds: a
// forged, duplicate or out-of-bounds message leaves the state as it was.
// newKey makes the next own ratchet key when m starts a new peer chain.
func (r *ratchet) decrypt(adPrefix []byte, envID wire.EnvelopeID, m wire.RatchetMessage, newKey func() (*x25519.Key, error)) ([]byte, error) {
	h := m.Header
	ad, _ := h.AppendBinary(adPrefix)
	if mk, ok := r.skipped[skippedKey{h.RatchetKey, h.MessageNumber}]; ok {
		pt, err := open(&mk, envID, ad, m.Ciphertext)
		if err != nil {
			return nil, err
		}
		r.forget(skippedKey{h.RatchetKey, h.MessageNumber})
		return pt, nil
	}

	var skips []skippedEntry
	sameChain := r.hasDHR && h.RatchetKey == r.dhr
	root, ckr, nr := r.root, r.ckr, r.nr
	if !sameChain {
		// Close the current receiving chain up to the peer's previous length.
		// A smaller previous length than already received can only come from
		// a forgery, which fails authentication below.
		if r.hasCKR && h.PreviousChainLength > nr {
			if h.PreviousChainLength-nr > MaxSkip {
				return nil, fmt.Errorf("%w: %d keys", ErrTooManySkipped, h.PreviousChainLength-nr)
			}
			for ; nr < h.PreviousChainLength; nr++ {
				mk, next := chainStep(&ckr)
				skips = append(skips, skippedEntry{skippedKey{r.dhr, nr}, mk})
				ckr = next
			}
		}
		if h.MessageNumber > MaxSkip {
			return nil, fmt.Errorf("%w: %d keys", ErrTooManySkipped, h.MessageNumber)
		}
		out, err := dh(r.dhs, h.RatchetKey[:])
		if err != nil {
			return nil, err
		}
		root, ckr = kdfRoot(&root, out)
		nr = 0
	} else if !r.hasCKR {
		return nil, ErrDecrypt
	}
	if h.MessageNumber < nr {
		return nil, ErrDuplicateMessage
	}
	if h.MessageNumber-nr > MaxSkip {
		return nil, fmt.Errorf("%w: %d keys", ErrTooManySkipped, h.MessageNumber-nr)
	}
	for ; nr < h.MessageNumber; nr++ {
		mk, next := chainStep(&ckr)
		skips = append(skips, skippedEntry{skippedKey{h.RatchetKey, nr}, mk})
		ckr = next
	}
	mk, next := chainStep(&ckr)
	pt, err := open(&mk, envID, ad, m.Ciphertext)
	if err != nil {
		return nil, err
	}

	// Authenticated: commit the receiving side, then turn the sending side.
	if !sameChain {
		k, err := newKey()
		if err != nil {
			return nil, err
		}
		out, err := dh(k, h.RatchetKey[:])
		if err != nil {
			return nil, err
		}
		r.pn = r.ns
		r.ns = 0
		r.dhr = h.RatchetKey
		r.hasDHR = true
		r.setDHS(k)
		r.root, r.cks = kdfRoot(&root, out)
		r.hasCKS = true
	}
	r.ckr, r.nr, r.hasCKR = next, nr+1, true
	for _, s := range skips {
		r.remember(s.key, s.mk)
	}
	return pt, nil
}

type skippedEntry struct {
	key skippedKey
	mk  messageKey
}

func open(mk *messageKey, envID wire.EnvelopeID, ad, ct []byte) ([]byte, error) {
	key, nonce := envelopeKey(mk, envID)
	aead := newAEAD(&key)
	if len(ct) < aead.Overhead() {
		return nil, ErrDecrypt
	}
	pt, err := aead.Open(make([]byte, 0, len(ct)-aead.Overhead()), nonce[:], ct, ad)
	if err != nil {
		return nil, ErrDecrypt
	}
	return pt, nil
}

func (r *ratchet) remember(k skippedKey, mk messageKey) {
	if r.skipped == nil {
		r.skipped = make(map[skippedKey]messageKey)
	}
	r.skipped[k] = mk
	r.order = append(r.order, k)
	for len(r.skipped) > MaxSkippedKeys {
		old := r.order[0]
		r.order = r.order[1:]
		delete(r.skipped, old)
	}
}

func (r *ratchet) forget(k skippedKey) {
	delete(r.skipped, k)
	for i, o := range r.order {
		if o == k {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
}

// pubOf returns k's public key as a slice.
func pubOf(k *x25519.Key) []byte {
	p := k.Public()
	return p[:]
}

// dh is X25519(k, pub); a refused point (wrong length, small order) is a
// decryption failure.
func dh(k *x25519.Key, pub []byte) ([]byte, error) {
	out, ok := x25519.DH(k, pub)
	if !ok {
		return nil, ErrDecrypt
	}
	return out, nil
}

// x25519From parses a stored private key.
func x25519From(b []byte, what string) (*x25519.Key, error) {
	if len(b) != 32 {
		return nil, fmt.Errorf("decode %s: %w", what, ErrMalformedState)
	}
	return x25519.FromScalar([32]byte(b)), nil
}
