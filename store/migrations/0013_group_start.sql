-- 0013: signed roster changes. A device's view of a group begins at the
-- change that added it (start_change, the creation for its creator); no
-- change below that generation applies. Once the log grows long it is
-- compacted: snapshot holds the roster merged at a generation (a roster
-- frame of the unsigned layout, used only as a record here), vouchers the
-- authors of the changes counted up to it (space-separated), and the
-- changes at or below that generation are deleted. Groups kept before 0013
-- have neither: their start is the lowest change an admin made
-- (engine.LegacyStart).
ALTER TABLE grp ADD COLUMN start_change BLOB CHECK (start_change IS NULL OR length(start_change) = 16);
ALTER TABLE grp ADD COLUMN snapshot BLOB;
ALTER TABLE grp ADD COLUMN vouchers TEXT;
