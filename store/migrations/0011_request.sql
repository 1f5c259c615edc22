-- 0011: message requests (engine/request.go). A request is the first
-- messages from a device this profile has not accepted: its pending
-- messages sit in inbound like any other, but are not listed as deliveries
-- while the sender has a row here. The preview is the start of the first
-- message, cleaned of control characters, sealed like a body.
CREATE TABLE request (
    peer           TEXT PRIMARY KEY,
    first_seen     INTEGER NOT NULL, -- Unix nanoseconds
    last_seen      INTEGER NOT NULL,
    count          INTEGER NOT NULL CHECK (count > 0),
    bytes          INTEGER NOT NULL CHECK (bytes >= 0),
    sealed_preview BLOB NOT NULL
) STRICT;
CREATE INDEX request_first_seen ON request (first_seen);

-- Devices the owner accepted (a request accepted, or accepted before it
-- wrote); contacts and devices written to are accepted without a row.
-- The conversations that exist when this version arrives are accepted:
-- their messages were taken before requests existed.
CREATE TABLE accepted_peer (
    address TEXT PRIMARY KEY,
    at      INTEGER NOT NULL
) STRICT;
INSERT INTO accepted_peer (address, at) SELECT DISTINCT peer, 0 FROM history;

-- Blocked senders: while blocked is 1 their envelopes are dropped
-- unopened. relay_told is 1 once the relay heard of the last change
-- (engine.SenderBlocker); an unblocked row stays until the relay heard of
-- the unblock.
CREATE TABLE blocked (
    address    TEXT PRIMARY KEY,
    at         INTEGER NOT NULL,
    blocked    INTEGER NOT NULL CHECK (blocked IN (0, 1)),
    relay_told INTEGER NOT NULL CHECK (relay_told IN (0, 1)),
    CHECK (blocked = 1 OR relay_told = 0)
) STRICT;
