-- 0028: a finalized record of a received message keeps the message's
-- content type (wire.ContentType: text, file, reply, reaction, edit,
-- delete) and when it arrived here (the envelope's staging time, Unix
-- nanoseconds). A sibling's commit of an action (frame kind 18) takes a
-- discard back only when the record says the discarded message was that
-- kind of action, and judges the action's window from its arrival, not
-- from its discard.
--
-- The records stored before this migration keep NULL in both: no record
-- says what they were. A kind-18 take-back refuses them (the decision
-- counts as a commit without its action, as before 0025 for a record of
-- unknown kind); a kind-16 take-back of a plain message accepts them, as
-- before. The records of a sent copy from a sibling and of a decision
-- frame hold NULL too: nothing takes them back.
ALTER TABLE finalized ADD COLUMN content INTEGER CHECK (content IS NULL OR content > 0);
ALTER TABLE finalized ADD COLUMN arrived INTEGER;
