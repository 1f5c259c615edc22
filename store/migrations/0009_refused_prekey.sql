-- 0009: the one-time prekeys of a peer that refused an initiation using
-- them (a recovery request reset the session). A relay that hands one of
-- them out again is not believed: the next initiation to that peer uses the
-- signed prekeys alone. Pruned with the retired initiations.
CREATE TABLE refused_one_time_prekey (
    peer       TEXT NOT NULL,
    key_id     INTEGER NOT NULL,
    refused_at INTEGER NOT NULL, -- seconds
    PRIMARY KEY (peer, key_id)
) STRICT;
CREATE INDEX refused_one_time_prekey_at ON refused_one_time_prekey (refused_at);
