-- 0007: reserved for another change of issue 18 (the engine's); this
-- placeholder keeps the numbers contiguous on its own branch and goes at
-- the merge.
SELECT 1;
