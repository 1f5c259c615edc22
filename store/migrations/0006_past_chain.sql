-- 0006: what a session remembers of the peer's past receiving chains (each
-- chain's ratchet key and how many messages it held), so that a relay's
-- redelivery of a message opened on a chain the session has since left is
-- known as a duplicate. One sealed record per peer, kept apart from the
-- session record, whose layout is frozen; it names the session it belongs
-- to, and a record of an older session is ignored and replaced.
CREATE TABLE past_chain (
    peer   TEXT NOT NULL PRIMARY KEY,
    sealed BLOB NOT NULL
) STRICT;
