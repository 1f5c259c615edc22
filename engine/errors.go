package engine

import (
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/wire"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	// ErrInvalidAddress is returned for a device address that is not user/device.
	ErrInvalidAddress = errors.New("invalid device address")
	// ErrIdentityChanged means a bundle or handshake carried an identity other
	// than the one pinned for that address; the user must accept the change.
	ErrIdentityChanged = errors.New("identity changed")
	// ErrFingerprintMismatch means an identity was to be accepted by a
	// fingerprint that is not the one the relay's bundle carries (the relay
	// served another key since it was shown), or by no fingerprint at all.
	ErrFingerprintMismatch = errors.New("not the identity shown")
	// ErrExpiredSignedPreKey means a bundle or PreKeyMessage relies on a signed
	// prekey (X25519 or ML-KEM) whose expiry time has passed.
	ErrExpiredSignedPreKey = session.ErrExpiredSignedPreKey
	// ErrUnknownPreKey means a PreKeyMessage names a prekey this device does not hold.
	ErrUnknownPreKey = session.ErrUnknownPreKey
	// ErrBadSignature means a signature in a bundle or handshake did not verify.
	ErrBadSignature = session.ErrBadSignature
	// ErrSessionCollision means the own pending initiation won a simultaneous
	// start; the incoming message was authenticated and dropped unread, its
	// initiation retired, and its sender must retry.
	ErrSessionCollision = errors.New("session collision")
	// ErrStaleSessionInitiation means a PreKeyMessage belongs to an initiation
	// this device has retired.
	ErrStaleSessionInitiation = errors.New("stale session initiation")
	// ErrStaleRecovery means a recovery request named a session that is not
	// the current one (already replaced, or a replay): nothing changes.
	ErrStaleRecovery = errors.New("recovery request for a session already replaced")
	// ErrNoSession means there is no session with the peer (for example an ACK
	// that may only travel on an existing session, or a RatchetMessage with no
	// session to decrypt it).
	ErrNoSession = errors.New("no session")
	// ErrDecrypt means a message failed to authenticate. It says nothing more on
	// purpose.
	ErrDecrypt = session.ErrDecrypt
	// ErrDuplicateMessage means a ratchet message key was already used: the
	// envelope is a replay of one already decrypted.
	ErrDuplicateMessage = session.ErrDuplicateMessage
	// ErrTooManySkipped means a message would skip more message keys than the
	// ratchet keeps.
	ErrTooManySkipped = session.ErrTooManySkipped
	// ErrLogicalMessageConflict means a logical ID arrived again with another body.
	ErrLogicalMessageConflict = errors.New("logical message conflict")
	// ErrMalformedState means a persisted state record failed to decode.
	ErrMalformedState = session.ErrMalformedState
	// ErrUnsupportedStateVersion means a persisted state record has a version
	// this build does not know.
	ErrUnsupportedStateVersion = session.ErrUnsupportedStateVersion
	// ErrNotPending means a commit, discard or abandon named a message that is
	// not pending.
	ErrNotPending = errors.New("message is not pending")
	// ErrAlreadyCommitted means a discard named a message committed before.
	ErrAlreadyCommitted = errors.New("message was committed")
	// ErrAlreadyDiscarded means a commit named a message discarded before.
	ErrAlreadyDiscarded = errors.New("message was discarded")
	// ErrProfileOpen means the profile is held by another store, in this or
	// another process.
	ErrProfileOpen = errors.New("profile is open in another process")
	// ErrProfileExists means init was asked to overwrite an existing profile.
	ErrProfileExists = errors.New("profile already exists")
	// ErrNoProfile means the profile directory holds no profile.
	ErrNoProfile = errors.New("no profile")
	// ErrWrongPassphrase means the passphrase did not unwrap the storage key.
	ErrWrongPassphrase = errors.New("wrong passphrase")
	// ErrSealedRecord means a sealed record failed to open: flipped bits, a
	// record moved to another row, or another key.
	ErrSealedRecord = errors.New("sealed record failed to open")
	// ErrStorageFull means the disk or the database refused to grow.
	ErrStorageFull = errors.New("storage full")
	// ErrStagingFull means the durable staging area reached its quota.
	ErrStagingFull = errors.New("inbox full")
	// ErrStorage means the store failed for a reason of its own (a disk or
	// driver error with no other meaning): what was being done stays to be
	// done.
	ErrStorage = errors.New("storage failed")
	// ErrInjected marks a failure a failpoint injected (tests): like a store
	// failure, it leaves what was being done to be done again.
	ErrInjected = errors.New("injected failure")
	// ErrConflict means the durable state was not what a plan expected; nothing
	// was applied.
	ErrConflict = errors.New("state changed underneath the plan")
	// ErrStateResyncRequired means the process stopped between a commit and the
	// presentation of its events; views must re-read their lists.
	ErrStateResyncRequired = errors.New("state resync required")
	// ErrClosed means the client or store was closed.
	ErrClosed = errors.New("closed")
	// ErrSendWindow means the sending chain with a peer carries SendWindow
	// messages that the peer is not known to have received: a further one
	// waits (pending, like a hand-off failure) until the peer's next message
	// turns the chain, rather than go where the peer would have to refuse it.
	ErrSendWindow = errors.New("sending window full: waiting for the peer")
	// ErrRelayUnreachable means the relay could not be reached (or is not
	// connected right now); what needed it stays to be done.
	ErrRelayUnreachable = errors.New("relay unreachable")
	// ErrPeerNotRegistered means the relay holds no bundle for the peer: no
	// device registered that address there (yet), so no session can start.
	ErrPeerNotRegistered = errors.New("not registered at the relay")
)

// MessageNotSentError reports a message that was stored as pending but whose
// envelope the relay did not take. The message stays pending; a retry sends it.
type MessageNotSentError struct {
	ID  wire.LogicalID
	Err error
}

func (e *MessageNotSentError) Error() string {
	return fmt.Sprintf("message %x not sent: %v", e.ID[:], e.Err)
}

// Unwrap returns the hand-off failure.
func (e *MessageNotSentError) Unwrap() error { return e.Err }

// ErrorName returns the snake_case name under which err is reported on the
// command line and in the event log, or "error" for an unnamed error.
func ErrorName(err error) string {
	var mns *MessageNotSentError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &mns):
		return "message_not_sent"
	}
	for _, n := range errorNames {
		if errors.Is(err, n.err) {
			return n.name
		}
	}
	switch {
	case errors.Is(err, wire.ErrMessageTooLarge):
		return "message_too_large"
	case errors.Is(err, wire.ErrUnsupportedVersion):
		return "unsupported_version"
	case errors.Is(err, wire.ErrMalformed):
		return "malformed_frame"
	}
	return "error"
}

var errorNames = []struct {
	err  error
	name string
}{
	{ErrKeptDecisionRefused, "kept_decision_refused"}, // before the cause it wraps (conflict)
	{ErrDecisionOwnMessage, "decision_own_message"},
	{ErrDecisionMismatch, "decision_mismatch"},
	{ErrHeldCopy, "held_copy"},
	{ErrCopyTooLarge, "copy_too_large"}, // before message_too_large, which it wraps
	{ErrIdentityChanged, "identity_changed"},
	{ErrFingerprintMismatch, "fingerprint_mismatch"},
	{ErrRequestPending, "request_pending"},
	{ErrRequestBound, "requests_full"},
	{ErrBlocked, "sender_blocked"},
	{ErrExpiredSignedPreKey, "expired_signed_prekey"},
	{ErrUnknownPreKey, "unknown_prekey"},
	{ErrBadSignature, "bad_signature"},
	{ErrSessionCollision, "session_collision"},
	{ErrStaleSessionInitiation, "stale_session_initiation"},
	{ErrNoSession, "no_session"},
	{ErrStaleRecovery, "stale_recovery_request"},
	{ErrPendingCap, "pending_cap"},
	{ErrDecrypt, "decryption_failed"},
	{ErrDuplicateMessage, "duplicate_message"},
	{ErrTooManySkipped, "too_many_skipped"},
	{ErrLogicalMessageConflict, "logical_message_conflict"},
	{ErrMalformedState, "malformed_state"},
	{ErrUnsupportedStateVersion, "unsupported_state_version"},
	{ErrNotPending, "not_pending"},
	{ErrAlreadyCommitted, "already_committed"},
	{ErrAlreadyDiscarded, "already_discarded"},
	{ErrProfileOpen, "profile_open"},
	{ErrProfileExists, "profile_exists"},
	{ErrNoProfile, "no_profile"},
	{ErrWrongPassphrase, "wrong_passphrase"},
	{ErrSealedRecord, "sealed_record"},
	{ErrStorageFull, "storage_full"},
	{ErrStagingFull, "inbox_full"},
	{ErrConflict, "conflict"},
	{ErrStorage, "storage_failed"},
	{ErrInjected, "injected"},
	{ErrStateResyncRequired, "state_resync_required"},
	{ErrInvalidAddress, "invalid_address"},
	{ErrClosed, "closed"},
	{ErrProfileTooNew, "profile_too_new"},
	{ErrProfileExposed, "profile_exposed"},
	{ErrRelayUnreachable, "relay_unreachable"},
	{ErrSendWindow, "send_window_full"},
	{ErrQueuedBehind, "queued_behind"},
	{ErrPeerNotRegistered, "peer_not_registered"},
	{ErrInvalidContactName, "invalid_contact_name"},
	{ErrBlobExpired, "blob_expired"},
	{ErrBlobNotFound, "blob_not_found"},
	{ErrBlobIncomplete, "blob_incomplete"},
	{ErrBlobQuota, "blob_quota"},
	{ErrBlobOffset, "blob_offset"},
	{ErrChunkAuth, "chunk_auth"},
	{ErrChunkSize, "chunk_size"},
	{ErrFileDigest, "file_digest"},
	{ErrFileNotFetched, "file_not_fetched"},
	{ErrFileTooLarge, "file_too_large"},
	{ErrNoBlobStore, "no_blob_store"},
	{ErrFileChanged, "file_changed"},
}

// ErrProfileExposed means a profile's directory or files are readable by
// others and could not be made private.
var ErrProfileExposed = errors.New("profile is readable by others")

// ErrProfileTooNew means the profile was written by a newer parley whose
// schema this build does not know.
var ErrProfileTooNew = errors.New("profile was written by a newer parley")
