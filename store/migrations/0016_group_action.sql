-- 0016: replies, reactions, edits and deletes for everyone in groups
-- (engine/groupaction.go). As 0015 for conversations, keyed like the group
-- history entry they change: (grp, sender, id), sender the entry's author.

-- What a group history entry holds beyond its body: an action message's
-- content type (a reaction's, an edit's or a delete's own entry is not
-- shown), a reply's quoted ID, the latest edit applied and the tombstone.
CREATE TABLE group_extra (
    grp      BLOB    NOT NULL CHECK (length(grp) = 16),
    sender   TEXT    NOT NULL,
    id       BLOB    NOT NULL CHECK (length(id) = 16),
    action   INTEGER NOT NULL DEFAULT 0 CHECK (action IN (0, 3, 4, 5, 6)),
    reply_to BLOB    CHECK (reply_to IS NULL OR length(reply_to) = 16),
    edits    INTEGER NOT NULL DEFAULT 0 CHECK (edits >= 0),
    deleted  INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
    PRIMARY KEY (grp, sender, id)
) STRICT, WITHOUT ROWID;

-- The bodies an edit of a group message replaced (edit 0 is the original),
-- kept on this device only; a delete removes them.
CREATE TABLE group_version (
    grp         BLOB    NOT NULL CHECK (length(grp) = 16),
    sender      TEXT    NOT NULL,
    id          BLOB    NOT NULL CHECK (length(id) = 16),
    edit        INTEGER NOT NULL CHECK (edit >= 0),
    at          INTEGER NOT NULL,
    sealed_body BLOB    NOT NULL,
    PRIMARY KEY (grp, sender, id, edit)
) STRICT, WITHOUT ROWID;

-- One reaction per member per group message; a new one replaces it.
CREATE TABLE group_reaction (
    grp          BLOB    NOT NULL CHECK (length(grp) = 16),
    sender       TEXT    NOT NULL,
    id           BLOB    NOT NULL CHECK (length(id) = 16),
    reactor      TEXT    NOT NULL,
    at           INTEGER NOT NULL,
    sealed_emoji BLOB    NOT NULL,
    PRIMARY KEY (grp, sender, id, reactor)
) STRICT, WITHOUT ROWID;

-- A group message's entry found by its ID alone (a reaction's target).
CREATE INDEX group_history_id ON group_history (grp, id);
