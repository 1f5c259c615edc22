-- 0020: reserved for issue 33's per-device lanes, built on another branch.
-- This branch (backup and restore, issue 34) holds this no-op so that its
-- own migration keeps its reserved number (0021) and the numbers run on
-- without a gap; the merge replaces this file with the lanes' migration.
SELECT 1;
