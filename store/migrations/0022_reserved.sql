-- 0022: reserved for another branch's migration. This branch (history at
-- link time, issue 34) holds this no-op so that its own migration keeps
-- its reserved number (0024) and the numbers run on without a gap; the
-- merge replaces or renumbers it.
SELECT 1;
