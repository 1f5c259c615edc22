-- 0020: lanes per device (docs/storage.md, "People and their devices").
--
-- peer_account keeps, per peer user, the latest device list this device
-- verified (wire.DeviceList, as received: it is signed, nothing secret),
-- its generation and account key apart so that a newer list is checked by
-- compare-and-set, and the conversation address: the device address under
-- which the history with that person is kept (the lowest device number of
-- the first list held, so the person's first device, fixed once chosen).
-- The account key is pinned on first sight as an identity is.
CREATE TABLE peer_account (
    user         TEXT PRIMARY KEY,
    account_key  BLOB NOT NULL CHECK (length(account_key) = 32),
    generation   INTEGER NOT NULL CHECK (generation >= 1),
    list         BLOB NOT NULL,
    conversation TEXT NOT NULL,
    fetched_at   INTEGER NOT NULL
) STRICT;

-- One row per lane of a message sent to a person with several devices, or
-- copied to this person's other devices: the lane's outbound row is an
-- ordinary pending message; person_lane says which conversation it belongs
-- to, whether it is a sent copy (own = 1) and how it ended. State as
-- group_lane's: 1 pending, 3 acknowledged, 4 abandoned, 5 removed.
CREATE TABLE person_lane (
    recipient    TEXT NOT NULL,
    id           BLOB NOT NULL CHECK (length(id) = 16),
    conversation TEXT NOT NULL,
    own          INTEGER NOT NULL CHECK (own IN (0, 1)),
    state        INTEGER NOT NULL,
    PRIMARY KEY (recipient, id)
) STRICT;
CREATE INDEX person_lane_message ON person_lane (conversation, id);

-- Decisions are the person's: a decision another device of this person
-- told here (frame kind 15) about a message not pending here yet is kept
-- until the message comes (engine.MaxKeptDecisions at most); two decisions
-- on one message merge, commit beating discard (outcome 1 beats 2).
CREATE TABLE kept_decision (
    sender    TEXT NOT NULL,
    id        BLOB NOT NULL CHECK (length(id) = 16),
    outcome   INTEGER NOT NULL CHECK (outcome IN (1, 2)),
    on_device TEXT NOT NULL,
    at        INTEGER NOT NULL,
    PRIMARY KEY (sender, id)
) STRICT;

-- A received message committed because another device of this person
-- committed it names that device.
ALTER TABLE history ADD COLUMN decided_on TEXT;
