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

-- A sibling's commit of a one-to-one action (frame kind 18) heard while
-- the action's target is discarded here, not yet taken back, is kept with
-- its action (the content type, the action's target ID, and the sealed
-- action body, kind "kept-action", row key sender and id): when a later
-- decision takes the target back, the same transaction takes the action
-- back and applies it by the action rules. NULL in the three for every
-- other kept decision (all of those kept before this migration).
ALTER TABLE kept_decision ADD COLUMN content INTEGER CHECK (content IS NULL OR content > 0);
ALTER TABLE kept_decision ADD COLUMN target BLOB CHECK (target IS NULL OR length(target) = 16);
ALTER TABLE kept_decision ADD COLUMN sealed_action BLOB;
CREATE INDEX kept_decision_target ON kept_decision (sender, target) WHERE target IS NOT NULL;

-- A committed one-to-one action keeps its action body in its finalized
-- record (sealed, kind "finalized-action", row key sender and id; at most
-- wire.MaxDecisionActionSize), so that the catch-up of a sibling linked
-- since carries the action (frame kind 18) and a discard there is taken
-- back. NULL elsewhere, and on every record from before this migration:
-- the catch-up of those goes as before (kind 16, taking no action back).
ALTER TABLE finalized ADD COLUMN sealed_action BLOB;
-- The action's target ID beside its body, so that a delete applied to a
-- target clears the body of the target's own record and of the edits and
-- reactions of it (their text is gone from history; the catch-up must not
-- send it again). Both indexes hold only records that still keep a body.
ALTER TABLE finalized ADD COLUMN target BLOB CHECK (target IS NULL OR length(target) = 16);
CREATE INDEX finalized_action_id ON finalized (id) WHERE sealed_action IS NOT NULL;
CREATE INDEX finalized_action_target ON finalized (target) WHERE sealed_action IS NOT NULL;
