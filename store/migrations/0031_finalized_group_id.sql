-- 0031: the finalized records of a group's messages are found by group and
-- logical ID, whoever sent them: a reaction names any member's message,
-- and its target's author may have left the group (or been removed) since
-- the target was discarded here, so the roster no longer names the sender
-- whose record (sender, id) holds it. The engine reads the senders of
-- those records (DB.GroupRecordSenders) beside the roster's members when
-- it looks for a reaction's discarded target, so that a sibling's commit
-- of the reaction is kept for that target's take-back.
CREATE INDEX finalized_group_id ON finalized (grp, id) WHERE grp IS NOT NULL;
