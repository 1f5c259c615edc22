-- 0003: a conversation is read in the order its messages happened on this
-- device (sent, or arrived), not in the order they entered the history: a
-- received message enters it when it is committed, which can be long after
-- it arrived.
CREATE INDEX history_peer_at ON history (peer, at, seq);
