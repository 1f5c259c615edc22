package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/engine"
)

// Record kinds: the first part of a sealed record's associated data. A kind
// names what the record is; the row key names which row it belongs to. Never
// reuse a kind for another meaning.
const (
	kindStorageKey      = "storage-key"      // meta storage_key, under the passphrase key; row key: empty
	kindIdentity        = "identity"         // row key: empty
	kindSignedPreKey    = "signed-prekey"    // row key: kind, id
	kindOneTimePreKey   = "one-time-prekey"  // row key: id
	kindSession         = "session"          // row key: peer
	kindOutboundFrame   = "outbound-frame"   // row key: recipient, id
	kindInboundFrame    = "inbound-frame"    // row key: sender, id
	kindInboundDigest   = "inbound-digest"   // row key: sender, id
	kindFinalizedDigest = "finalized-digest" // row key: sender, id
	kindHistoryBody     = "history-body"     // row key: peer, direction, id
	kindStaged          = "inbox"            // row key: row
	kindContactName     = "contact-name"     // row key: address
	kindAttempt         = "attempt"          // row key: peer, id, number
	kindPastChains      = "past-chains"      // row key: peer
	kindDraft           = "draft"            // row key: address
	kindRequestPreview  = "request-preview"  // row key: address
	kindKeptAction      = "kept-action"      // row key: sender, id
	kindFinalizedAction = "finalized-action" // row key: sender, id
)

// sealedColumns names the record kind of every sealed column of the schema
// (table.column). A test holds the schema to it: a new sealed column needs a
// kind here and a line in docs/storage.md.
var sealedColumns = map[string]string{
	"identity.sealed":               kindIdentity,
	"signed_prekey.sealed":          kindSignedPreKey,
	"one_time_prekey.sealed":        kindOneTimePreKey,
	"session.sealed":                kindSession,
	"outbound.sealed_frame":         kindOutboundFrame,
	"inbound.sealed_frame":          kindInboundFrame,
	"inbound.sealed_digest":         kindInboundDigest,
	"finalized.sealed_digest":       kindFinalizedDigest,
	"history.sealed_body":           kindHistoryBody,
	"inbox.sealed":                  kindStaged,
	"contact.sealed_name":           kindContactName,
	"attempt.sealed":                kindAttempt,
	"past_chain.sealed":             kindPastChains,
	"draft.sealed_text":             kindDraft,
	"request.sealed_preview":        kindRequestPreview,
	"import_progress.sealed_source": kindImportSource,
	"kept_decision.sealed_action":   kindKeptAction,
	"finalized.sealed_action":       kindFinalizedAction,
	// A quarantined row keeps its inbox record and row number verbatim.
	"quarantine.sealed": kindStaged,
}

const (
	storageKeySize = 32 // AES-256
	nonceSize      = 12 // the standard GCM nonce
	adPrefix       = "parley/v1/"
)

// sealer seals records at rest with AES-256-GCM under one key. Every record is
// nonce || ciphertext || tag with a fresh random nonce; its associated data is
//
//	"parley/v1/" || kind || 0x00 || rowKey
//
// so that a record copied to another row or another kind of record, a record
// with a flipped bit, or one sealed under another key fails to open.
//
// Random 96-bit nonces keep the chance of a repeat below 2^-32 for 2^32 seals
// under one key (NIST SP 800-38D); a profile would need billions of messages
// to come near that.
type sealer struct {
	aead cipher.AEAD
}

func newSealer(key []byte) (*sealer, error) {
	if len(key) != storageKeySize {
		return nil, fmt.Errorf("store: make sealer: key is %d bytes, want %d", len(key), storageKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("store: make sealer: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("store: make sealer: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// seal returns the sealed record of plaintext as the record kind of the row
// rowKey. The kind must be one of the kind constants.
func (s *sealer) seal(kind string, rowKey, plaintext []byte) []byte {
	ad := associatedData(kind, rowKey)
	out := make([]byte, nonceSize, nonceSize+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		// crypto/rand never fails on the platforms Go supports (Go 1.24+
		// crashes the program instead); keep the check for clarity.
		panic(fmt.Sprintf("store: read nonce: %v", err))
	}
	return s.aead.Seal(out, out, plaintext, ad)
}

// open returns the plaintext of a record sealed by seal with the same kind and
// row key, or an error matching engine.ErrSealedRecord. It says nothing more
// on purpose.
func (s *sealer) open(kind string, rowKey, sealed []byte) ([]byte, error) {
	if len(sealed) < nonceSize+s.aead.Overhead() {
		return nil, fmt.Errorf("store: open %s record: %w", kind, engine.ErrSealedRecord)
	}
	ad := associatedData(kind, rowKey)
	pt, err := s.aead.Open(nil, sealed[:nonceSize], sealed[nonceSize:], ad)
	if err != nil {
		return nil, fmt.Errorf("store: open %s record: %w", kind, engine.ErrSealedRecord)
	}
	return pt, nil
}

func associatedData(kind string, rowKey []byte) []byte {
	if kind == "" || strings.IndexByte(kind, 0) >= 0 {
		panic(fmt.Sprintf("store: bad record kind %q", kind))
	}
	ad := make([]byte, 0, len(adPrefix)+len(kind)+1+len(rowKey))
	ad = append(ad, adPrefix...)
	ad = append(ad, kind...)
	ad = append(ad, 0)
	return append(ad, rowKey...)
}

// rowKey builds the row key of a record from the parts of its logical key:
// each part is a 2-byte big-endian length and its bytes, so that no two
// different part lists encode alike ("ab","c" and "a","bc" differ). Use
// rowKeyInt for integers.
func rowKey(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += 2 + len(p)
	}
	k := make([]byte, 0, n)
	for _, p := range parts {
		if len(p) > 0xffff {
			panic(fmt.Sprintf("store: row key part of %d bytes", len(p)))
		}
		k = binary.BigEndian.AppendUint16(k, uint16(len(p)))
		k = append(k, p...)
	}
	return k
}

// rowKeyInt is the row key part of an integer: 8 bytes big-endian.
func rowKeyInt(v int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v))
}
