-- 0012: fewer B-trees written per message. The finalized records and the
-- attempt log are keyed by their primary keys alone (WITHOUT ROWID): no
-- query pages them by rowid and no cursor is their sequence, so an insert
-- writes one tree instead of a table and its key index. history_peer_seq
-- serves no query since 0003 ordered conversations by (peer, at, seq); an
-- index on peer alone is a prefix of that one and of the UNIQUE key.
CREATE TABLE finalized_v12 (
    sender        TEXT NOT NULL,
    id            BLOB NOT NULL CHECK (length(id) = 16),
    outcome       INTEGER NOT NULL CHECK (outcome IN (1, 2)),
    reason        INTEGER NOT NULL CHECK (reason >= 0),
    at            INTEGER NOT NULL,
    sealed_digest BLOB NOT NULL,
    PRIMARY KEY (sender, id)
) STRICT, WITHOUT ROWID;
INSERT INTO finalized_v12 (sender, id, outcome, reason, at, sealed_digest)
    SELECT sender, id, outcome, reason, at, sealed_digest FROM finalized;
DROP TABLE finalized;
ALTER TABLE finalized_v12 RENAME TO finalized;
CREATE INDEX finalized_at ON finalized (at);

CREATE TABLE attempt_v12 (
    peer     TEXT    NOT NULL,
    id       BLOB    NOT NULL,
    n        INTEGER NOT NULL, -- 1 for the send, then one more per retry
    at       INTEGER NOT NULL, -- Unix nanoseconds
    sealed   BLOB    NOT NULL,
    taken_at INTEGER,          -- Unix nanoseconds; NULL while nothing was heard
    PRIMARY KEY (peer, id, n)
) STRICT, WITHOUT ROWID;
INSERT INTO attempt_v12 (peer, id, n, at, sealed, taken_at)
    SELECT peer, id, n, at, sealed, taken_at FROM attempt;
DROP TABLE attempt;
ALTER TABLE attempt_v12 RENAME TO attempt;
CREATE INDEX attempt_at ON attempt (at);

DROP INDEX history_peer_seq;
