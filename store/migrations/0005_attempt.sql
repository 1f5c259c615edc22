-- 0005: the attempt log of sent messages: one row per envelope that carried
-- a message (its send, then each retry), written in the transaction that
-- encrypted it, so that parley trace can show a message's whole life. What
-- an attempt carried (envelope ID, type, the session initiation it was
-- encrypted on) is sealed; pruned with the finalized records.
CREATE TABLE attempt (
    peer   TEXT    NOT NULL,
    id     BLOB    NOT NULL,
    n      INTEGER NOT NULL, -- 1 for the send, then one more per retry
    at     INTEGER NOT NULL, -- Unix nanoseconds
    sealed BLOB    NOT NULL,
    PRIMARY KEY (peer, id, n)
) STRICT;
CREATE INDEX attempt_at ON attempt (at);
