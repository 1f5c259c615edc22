-- 0024: adopting a removed device's messages (issue 33). history_copied
-- holds only the sent copies (state 4, engine.SentCopied), the rows
-- adoption reads by ID from the removed device's finalized records;
-- other rows are not indexed, so a message sent or received here writes
-- no more than before. (The receiver's deduplication by person needs no
-- index: it reads each other device's record by its primary key.)
CREATE INDEX history_copied ON history (id) WHERE direction = 2 AND state = 4;
