-- 0025: decisions are the person's for group messages too (issue 33).
-- finalized.grp names the group of a received group message (NULL for a
-- one-to-one message, and for a group message finalized before 0025): a
-- device that discarded it reads the group from its record when a
-- sibling's commit takes the message back (commit beats discard), and a
-- device catching up a sibling reads a group commit's body from the
-- group's history by (grp, sender, id), its UNIQUE key. The column is in
-- the record's one B-tree (WITHOUT ROWID): no index is added.
-- group_history.decided_on names the device of this person whose
-- decision committed the entry here, as history.decided_on (0020) does;
-- NULL when this device decided.
ALTER TABLE finalized ADD COLUMN grp BLOB CHECK (grp IS NULL OR length(grp) = 16);
ALTER TABLE group_history ADD COLUMN decided_on TEXT;
-- A discard finalized before 0025 may have been a group message's: its
-- grp is the all-zero ID (store.unknownGroup), and a sibling's commit
-- leaves it discarded rather than take it back into the wrong history.
UPDATE finalized SET grp = zeroblob(16) WHERE outcome = 2;
