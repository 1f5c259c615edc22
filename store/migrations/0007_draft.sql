-- 0007: the text being written in each conversation (the composer's draft),
-- kept across restarts, one per peer, sealed like a message body: it is
-- what the owner was about to say.
CREATE TABLE draft (
    address     TEXT PRIMARY KEY,
    sealed_text BLOB NOT NULL
) STRICT;
