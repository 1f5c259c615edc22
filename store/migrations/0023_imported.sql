-- 0023: history that came by import (issue 34). imported names the archive
-- (import_progress.archive) whose import wrote the entry, in the
-- transaction of its batch; NULL for an entry written here (sent,
-- received, or there before the import, which keeps it). The import's
-- row says when it started and whether it was a linked device's history
-- (sealed_source set) or a restore.
ALTER TABLE history ADD COLUMN imported BLOB CHECK (imported IS NULL OR length(imported) = 16);
ALTER TABLE group_history ADD COLUMN imported BLOB CHECK (imported IS NULL OR length(imported) = 16);
