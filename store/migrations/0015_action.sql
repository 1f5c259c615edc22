-- 0015: replies, reactions, edits and deletes for everyone (engine/action.go).
-- An action is a message of its own; what it does to its target lives here,
-- keyed like the history entry it changes (peer, direction, id).

-- What a history entry holds beyond its body: for an action message, its
-- content type (3 reply, 4 reaction, 5 edit, 6 delete; a reaction's, an
-- edit's or a delete's own entry is not shown in the conversation); for a
-- reply, the logical ID it quotes; for a message edited or deleted, the
-- number of the latest edit applied and the tombstone flag.
CREATE TABLE message_extra (
    peer      TEXT    NOT NULL,
    direction INTEGER NOT NULL CHECK (direction IN (1, 2)),
    id        BLOB    NOT NULL CHECK (length(id) = 16),
    action    INTEGER NOT NULL DEFAULT 0 CHECK (action IN (0, 3, 4, 5, 6)),
    reply_to  BLOB    CHECK (reply_to IS NULL OR length(reply_to) = 16),
    edits     INTEGER NOT NULL DEFAULT 0 CHECK (edits >= 0),
    deleted   INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
    PRIMARY KEY (peer, direction, id)
) STRICT, WITHOUT ROWID;

-- The bodies an edit replaced (edit 0 is the original), kept on this device
-- only; a delete removes them.
CREATE TABLE message_version (
    peer        TEXT    NOT NULL,
    direction   INTEGER NOT NULL CHECK (direction IN (1, 2)),
    id          BLOB    NOT NULL CHECK (length(id) = 16),
    edit        INTEGER NOT NULL CHECK (edit >= 0),
    at          INTEGER NOT NULL,
    sealed_body BLOB    NOT NULL,
    PRIMARY KEY (peer, direction, id, edit)
) STRICT, WITHOUT ROWID;

-- One reaction per person per message; a new one replaces it.
CREATE TABLE reaction (
    peer         TEXT    NOT NULL,
    direction    INTEGER NOT NULL CHECK (direction IN (1, 2)),
    id           BLOB    NOT NULL CHECK (length(id) = 16),
    reactor      TEXT    NOT NULL,
    at           INTEGER NOT NULL,
    sealed_emoji BLOB    NOT NULL,
    PRIMARY KEY (peer, direction, id, reactor)
) STRICT, WITHOUT ROWID;

-- A pending received action's content type (0 for anything else), so that
-- the actions waiting for their target are found without opening every
-- pending message.
ALTER TABLE inbound ADD COLUMN action INTEGER NOT NULL DEFAULT 0;
CREATE INDEX inbound_action ON inbound (seq) WHERE action > 0;
