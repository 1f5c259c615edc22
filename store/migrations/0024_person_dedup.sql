-- 0024: adopting a removed device's messages (issue 33). A surviving
-- device resends them under the same logical ID, so a receiver looks a
-- message up by its ID alone and keeps the rows whose sender is a device
-- of the same person (engine.Client.seenFromPerson): inbound_id and
-- finalized_id serve that lookup. history_copied holds only the sent
-- copies (state 4, engine.SentCopied), the rows adoption reads by ID from
-- the removed device's finalized records; other rows are not indexed, so
-- a message sent or received here writes no more than before.
CREATE INDEX inbound_id ON inbound (id);
CREATE INDEX finalized_id ON finalized (id);
CREATE INDEX history_copied ON history (id) WHERE direction = 2 AND state = 4;
