-- 0002: a session reset remembers which of the peer's initiations the next
-- own initiation names as the one it replaces (32 bytes; NULL for none).
ALTER TABLE peer ADD COLUMN replaces BLOB CHECK (replaces IS NULL OR length(replaces) = 32);
