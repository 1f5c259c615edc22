-- The relay's durable state, version 6 (sqlitemigrate.go migrates versions 1 to 5).
-- Every statement is idempotent.

-- meta holds the relay's identity ("relay_id", 32 bytes).
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value BLOB NOT NULL
) STRICT;

-- The first Ed25519 key to authenticate as an address owns it. ip is the
-- remote IP that registered it first ('' when unknown), for the per-IP
-- registration limit.
CREATE TABLE IF NOT EXISTS registrations (
	address     TEXT PRIMARY KEY,
	signing_key BLOB NOT NULL,
	ip          TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX IF NOT EXISTS registrations_by_ip ON registrations (ip);

-- The current bundle of an address, encoded without a one-time prekey.
CREATE TABLE IF NOT EXISTS bundles (
	address TEXT PRIMARY KEY,
	bundle  BLOB NOT NULL
) STRICT;

-- One-time prekeys, handed out oldest first (seq) and deleted as they go.
CREATE TABLE IF NOT EXISTS one_time_prekeys (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	address    TEXT NOT NULL,
	id         INTEGER NOT NULL,
	public_key BLOB NOT NULL,
	UNIQUE (address, id)
);

-- Mailboxes: row is the number a recipient acknowledges an envelope by.
-- AUTOINCREMENT never reuses a number, even after the newest row is deleted.
-- sender and ip are who the envelope is charged to; envelope_id, the ID
-- parsed at submission, is what the sender is told when the row goes.
CREATE TABLE IF NOT EXISTS envelopes (
	row       INTEGER PRIMARY KEY AUTOINCREMENT,
	recipient TEXT NOT NULL,
	envelope  BLOB NOT NULL,
	sender    TEXT NOT NULL DEFAULT '',
	ip        TEXT NOT NULL DEFAULT '',
	accepted  INTEGER NOT NULL DEFAULT 0, -- Unix nanoseconds, 0 for rows of version 1
	envelope_id BLOB NOT NULL DEFAULT x'',
	stranger  INTEGER NOT NULL DEFAULT 0, -- 1: charged to the room for strangers
	payload   INTEGER NOT NULL DEFAULT 0 -- 0: envelope is whole; else it is the head, and payloads.id names the rest
);
-- Payloads that several mailboxes share (a SubmitMulti's), kept once; refs
-- counts the envelopes rows that point at one, and the last row to go
-- deletes it.
CREATE TABLE IF NOT EXISTS payloads (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	payload BLOB NOT NULL,
	refs    INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS envelopes_by_recipient ON envelopes (recipient, row);
-- The expiry sweep takes the oldest envelopes first.
CREATE INDEX IF NOT EXISTS envelopes_by_accepted ON envelopes (accepted);

-- Running totals, so that every limit costs one lookup. scope is 'mailbox'
-- (key: the recipient), 'sender' (key: the recipient, a space, the sender),
-- 'ip' (key: the remote IP), 'total' (key: ''), 'stranger' (key: the
-- recipient) or 'stranger_ip' (key: the recipient, a space, the IP). A row
-- with nothing left is deleted.
CREATE TABLE IF NOT EXISTS usage (
	scope     TEXT NOT NULL,
	key       TEXT NOT NULL,
	envelopes INTEGER NOT NULL,
	bytes     INTEGER NOT NULL,
	PRIMARY KEY (scope, key)
) STRICT;

-- The peers each owner accepts (it sent them an envelope), seen being when
-- that was last recorded (Unix nanoseconds); the least recently seen go
-- first past the limit, and the relay's sweep deletes those older than
-- the accepted lifetime.
CREATE TABLE IF NOT EXISTS accepted_peers (
	owner TEXT NOT NULL,
	peer  TEXT NOT NULL,
	seen  INTEGER NOT NULL,
	PRIMARY KEY (owner, peer)
) STRICT;
CREATE INDEX IF NOT EXISTS accepted_peers_by_seen ON accepted_peers (seen);

-- The senders each owner blocks.
CREATE TABLE IF NOT EXISTS blocked_senders (
	owner  TEXT NOT NULL,
	sender TEXT NOT NULL,
	since  INTEGER NOT NULL,
	PRIMARY KEY (owner, sender)
) STRICT;

-- The latest device list of each account, keyed by the user part of its
-- addresses, with the IP its first generation came from (devicelist.go).
CREATE TABLE IF NOT EXISTS device_lists (
	user       TEXT PRIMARY KEY,
	generation INTEGER NOT NULL CHECK (generation >= 1),
	parent     BLOB NOT NULL CHECK (length(parent) = 32),
	digest     BLOB NOT NULL CHECK (length(digest) = 32),
	list       BLOB NOT NULL,
	ip         TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS device_lists_by_ip ON device_lists (ip);
