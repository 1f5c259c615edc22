package session

import "errors"

// The protocol's failures, matched with errors.Is (package engine exports
// the same values under the same names).
var (
	// ErrBadSignature means a signature in a bundle or handshake did not
	// verify.
	ErrBadSignature = errors.New("bad signature")
	// ErrExpiredSignedPreKey means a bundle or PreKeyMessage relies on a
	// signed prekey (X25519 or ML-KEM) whose expiry time has passed.
	ErrExpiredSignedPreKey = errors.New("expired signed prekey")
	// ErrUnknownPreKey means a PreKeyMessage names a prekey this device does
	// not hold.
	ErrUnknownPreKey = errors.New("unknown prekey")
	// ErrDecrypt means a message failed to authenticate. It says nothing more
	// on purpose.
	ErrDecrypt = errors.New("message failed to decrypt")
	// ErrDuplicateMessage means a ratchet message key was already used: the
	// envelope is a replay of one already decrypted.
	ErrDuplicateMessage = errors.New("duplicate ratchet message")
	// ErrTooManySkipped means a message would skip more message keys than the
	// ratchet keeps.
	ErrTooManySkipped = errors.New("too many skipped messages")
	// ErrMalformedState means a persisted state record failed to decode.
	ErrMalformedState = errors.New("malformed state record")
	// ErrUnsupportedStateVersion means a persisted state record has a version
	// this build does not know.
	ErrUnsupportedStateVersion = errors.New("unsupported state record version")
)
