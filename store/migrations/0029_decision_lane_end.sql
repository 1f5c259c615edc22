-- 0029: a lane that tells this person's other devices of a decision
-- (frame kinds 15, 16 and 18) names the message it decided (decided: its
-- logical ID; the row's conversation column already holds that message's
-- sender), and every lane of person_lane records when it left pending
-- (ended_at, Unix nanoseconds on this device's clock).
--
-- With them, the catch-up of a sibling linked since (engine catchUpLanes)
-- also tells a decision made before the link that the linking device may
-- not have heard when it cut the link's archive: one whose lanes were
-- still pending at the link, or were acknowledged only after it.
--
-- The rows stored before this migration hold NULL in both: they tell a
-- catch-up nothing, as before.
ALTER TABLE person_lane ADD COLUMN decided BLOB CHECK (decided IS NULL OR length(decided) = 16);
ALTER TABLE person_lane ADD COLUMN ended_at INTEGER;
CREATE INDEX person_lane_decided ON person_lane (conversation, decided) WHERE decided IS NOT NULL;
