-- 0008: groups. A group message or a roster change is pending to each member
-- as an ordinary outbound row (its lane keeps today's pairwise semantics:
-- FIFO with everything else pending to that member, retried, acknowledged,
-- abandoned); group_lane says which group a lane belongs to and how it ended.
CREATE TABLE grp (
    id         BLOB    PRIMARY KEY CHECK (length(id) = 16),
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

-- Every roster change seen, made here or received; the roster is their merge
-- (engine.MergeRoster). The frame is the roster frame as it arrived.
CREATE TABLE group_change (
    grp        BLOB    NOT NULL,
    id         BLOB    NOT NULL CHECK (length(id) = 16),
    author     TEXT    NOT NULL,
    generation INTEGER NOT NULL CHECK (generation >= 1),
    frame      BLOB    NOT NULL,
    at         INTEGER NOT NULL,
    PRIMARY KEY (grp, id)
) STRICT;

-- One row per lane of a message or roster change sent here. State: 1 pending
-- (the outbound row exists), 3 acknowledged, 4 abandoned, 5 removed,
-- 6 not_a_member.
CREATE TABLE group_lane (
    recipient TEXT    NOT NULL,
    id        BLOB    NOT NULL CHECK (length(id) = 16),
    grp       BLOB    NOT NULL,
    state     INTEGER NOT NULL,
    PRIMARY KEY (recipient, id)
) STRICT;
CREATE INDEX group_lane_grp ON group_lane (grp, id);

-- A group's history: own messages when sent, received ones when committed.
CREATE TABLE group_history (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    grp         BLOB    NOT NULL,
    sender      TEXT    NOT NULL,
    id          BLOB    NOT NULL CHECK (length(id) = 16),
    at          INTEGER NOT NULL,
    sealed_body BLOB    NOT NULL,
    UNIQUE (grp, sender, id)
) STRICT;
