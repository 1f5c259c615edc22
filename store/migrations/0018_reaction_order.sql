-- 0018: reactions ordered by their reactor (wire action version 2). Each
-- reaction row keeps the number of the reaction that set it (0 for one
-- sent without a number), and a removal keeps its row, marked removed, so
-- that its number still orders the reactor's later and earlier reactions
-- to the same message: a reaction applies only over a smaller number.
ALTER TABLE reaction ADD COLUMN num INTEGER NOT NULL DEFAULT 0 CHECK (num >= 0);
ALTER TABLE reaction ADD COLUMN removed INTEGER NOT NULL DEFAULT 0 CHECK (removed IN (0, 1));
ALTER TABLE group_reaction ADD COLUMN num INTEGER NOT NULL DEFAULT 0 CHECK (num >= 0);
ALTER TABLE group_reaction ADD COLUMN removed INTEGER NOT NULL DEFAULT 0 CHECK (removed IN (0, 1));
