-- 0030: a sibling's commit of a group's action (frame kind 18) heard
-- while the action's target is discarded here, not yet taken back, is
-- kept with its action as a one-to-one action's is (0028: content, target,
-- sealed_action), and names the group (grp): the take-back of the target
-- (a group text or reply, whose author may be another member than the
-- action's sender, as for a reaction) finds it by group and target ID,
-- and takes it back and applies it by the group's rules in the same
-- transaction. NULL for every other kept decision (those of one-to-one
-- actions, and all kept before this migration).
ALTER TABLE kept_decision ADD COLUMN grp BLOB CHECK (grp IS NULL OR length(grp) = 16);
CREATE INDEX kept_decision_group_target ON kept_decision (grp, target) WHERE target IS NOT NULL;
