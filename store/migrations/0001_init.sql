-- 0001: the first schema of a parley profile.
--
-- Conventions (docs/storage.md explains them):
--   * Every table is STRICT, so a wrong column type fails instead of being coerced.
--   * Times (*_at) are Unix time in nanoseconds, UTC, except where a column
--     says "seconds": those hold the engine's own Unix-seconds fields as given.
--   * Device addresses are TEXT "user/device"; logical IDs are 16-byte BLOBs.
--   * A column named sealed* holds an AES-256-GCM record under the storage key;
--     its associated data names the table ("kind") and the row's logical key.
--   * Sequence numbers use AUTOINCREMENT so that a number is never handed out
--     twice, even after the row holding it was deleted: pages are read "after
--     seq N" and must not see a newer row under an old number.

-- Key/value settings. Known keys: kdf, storage_key, address, relay_url,
-- next_prekey_id, one_time_published, marker_written, marker_presented (the
-- last four are 8-byte big-endian counters). None of them is a secret in
-- clear: storage_key is wrapped.
CREATE TABLE meta (
    k TEXT PRIMARY KEY,
    v BLOB NOT NULL
) STRICT;

-- The device's own identity record (private keys): exactly one row once the
-- profile is initialised.
CREATE TABLE identity (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    sealed    BLOB NOT NULL
) STRICT;

-- Signed prekeys, kind 1 = X25519, 2 = ML-KEM-768. Expired ones are deleted.
CREATE TABLE signed_prekey (
    kind       INTEGER NOT NULL CHECK (kind IN (1, 2)),
    id         INTEGER NOT NULL,
    created_at INTEGER NOT NULL, -- seconds
    expires_at INTEGER NOT NULL, -- seconds
    sealed     BLOB NOT NULL,
    PRIMARY KEY (kind, id)
) STRICT;

-- One-time X25519 prekeys; a row is deleted in the transaction that consumes it.
CREATE TABLE one_time_prekey (
    id         INTEGER PRIMARY KEY,
    created_at INTEGER NOT NULL, -- seconds
    sealed     BLOB NOT NULL
) STRICT;

-- Pinned remote identities, one per remote device.
CREATE TABLE peer (
    address            TEXT PRIMARY KEY,
    pinned_identity    BLOB NOT NULL,
    pinned_at          INTEGER NOT NULL,
    accepted_change_at INTEGER
) STRICT;

-- The current session with a remote device. The sealed record holds the
-- ratchet state including its bounded set of skipped message keys. version
-- counts the writes of the session with this peer: a plan names the version
-- it was prepared from and the store refuses it if the row moved on.
-- The foreign key is deferred so that a plan may write the pin and the session
-- in either order; it is checked at COMMIT.
CREATE TABLE session (
    peer           TEXT PRIMARY KEY
                   REFERENCES peer (address) DEFERRABLE INITIALLY DEFERRED,
    version        INTEGER NOT NULL CHECK (version > 0),
    initiation_id  BLOB NOT NULL CHECK (length(initiation_id) = 32),
    awaiting_reply INTEGER NOT NULL CHECK (awaiting_reply IN (0, 1)),
    updated_at     INTEGER NOT NULL,
    sealed         BLOB NOT NULL
) STRICT;

-- Initiations that lost or were replaced. Kept until no signed prekey they
-- could name is still held: prekey maintenance deletes those retired longer
-- ago than a signed prekey lives (retired_at < cutoff).
CREATE TABLE retired_initiation (
    peer             TEXT NOT NULL,
    initiation_id    BLOB NOT NULL CHECK (length(initiation_id) = 32),
    signed_prekey_id INTEGER NOT NULL,
    retired_at       INTEGER NOT NULL, -- seconds
    PRIMARY KEY (peer, initiation_id)
) STRICT;
CREATE INDEX retired_initiation_at ON retired_initiation (retired_at);

-- Pending sent messages: the encoded frame, kept until the recipient's ACK
-- clears it or the user abandons it.
CREATE TABLE outbound (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    recipient    TEXT NOT NULL,
    id           BLOB NOT NULL CHECK (length(id) = 16),
    created_at   INTEGER NOT NULL,
    sealed_frame BLOB NOT NULL,
    UNIQUE (recipient, id)
) STRICT;
CREATE INDEX outbound_recipient_seq ON outbound (recipient, seq);

-- Pending received messages, kept until the user commits or discards them.
-- The body digest is sealed, as in finalized.
CREATE TABLE inbound (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    sender        TEXT NOT NULL,
    id            BLOB NOT NULL CHECK (length(id) = 16),
    received_at   INTEGER NOT NULL,
    sealed_digest BLOB NOT NULL,
    sealed_frame  BLOB NOT NULL,
    UNIQUE (sender, id)
) STRICT;
CREATE INDEX inbound_sender_seq ON inbound (sender, seq);

-- Terminal records of received messages: outcome 1 committed, 2 discarded;
-- reason 0 for a commit, a discard reason otherwise. The body digest is
-- sealed: a plain SHA-256 of a short body would let anyone holding the file
-- confirm a guess of it.
CREATE TABLE finalized (
    sender        TEXT NOT NULL,
    id            BLOB NOT NULL CHECK (length(id) = 16),
    outcome       INTEGER NOT NULL CHECK (outcome IN (1, 2)),
    reason        INTEGER NOT NULL CHECK (reason >= 0),
    at            INTEGER NOT NULL,
    sealed_digest BLOB NOT NULL,
    PRIMARY KEY (sender, id)
) STRICT;
CREATE INDEX finalized_at ON finalized (at);

-- Conversation history: direction 1 in, 2 out; state is the engine's
-- SentState for a sent message (1 pending, 2 acknowledged, 3 abandoned) and 0
-- for a received one.
CREATE TABLE history (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    peer        TEXT NOT NULL,
    direction   INTEGER NOT NULL CHECK (direction IN (1, 2)),
    id          BLOB NOT NULL CHECK (length(id) = 16),
    at          INTEGER NOT NULL,
    state       INTEGER NOT NULL CHECK (state >= 0),
    sealed_body BLOB NOT NULL,
    UNIQUE (peer, direction, id)
) STRICT;
CREATE INDEX history_peer_seq ON history (peer, seq);

-- Staged envelopes, written before any parsing or cryptographic work and
-- deleted in the transaction of their consequence. relay_row is the relay's
-- mailbox row (a uint64 stored as its int64 bit pattern), acknowledged to the
-- relay after the stage committed.
CREATE TABLE inbox (
    row         INTEGER PRIMARY KEY AUTOINCREMENT,
    received_at INTEGER NOT NULL,
    relay_row   INTEGER NOT NULL,
    sealed      BLOB NOT NULL
) STRICT;

-- Staged envelopes that could not be processed. A row keeps its inbox row
-- number and its sealed record verbatim (still opened as an inbox record), so
-- that a record which failed to open can be moved here without the key.
CREATE TABLE quarantine (
    row            INTEGER PRIMARY KEY,
    received_at    INTEGER NOT NULL,
    quarantined_at INTEGER NOT NULL,
    reason         TEXT NOT NULL,
    sealed         BLOB NOT NULL
) STRICT;
