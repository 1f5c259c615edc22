-- 0009: reserved for the groups change that lands beside issue 20; this
-- placeholder keeps the numbers contiguous on its own branch and goes at
-- the merge.
SELECT 1;
