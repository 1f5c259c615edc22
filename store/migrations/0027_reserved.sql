-- 0027: reserved. Another branch takes this number; this placeholder
-- keeps the numbers without a gap until the branches are merged (the one
-- merged second renumbers). It changes nothing.
SELECT 1;
