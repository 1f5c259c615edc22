-- 0008: reserved for a migration on another branch (reliability fixes, TUI
-- drafts); this placeholder changes nothing and is replaced by that
-- migration when the branches merge.
SELECT 1;
