-- 0021: the import of a backup archive (issue 34, engine/restore.go). One
-- row per archive a restore imports into this profile, written in the
-- transaction that creates the restored profile; each batch of records
-- moves next on in the transaction that stores the batch, so a restore
-- killed at any point resumes at the first record not stored. done is set
-- by the last batch. archive is the archive's random ID (its header).
CREATE TABLE import_progress (
    archive    BLOB    PRIMARY KEY CHECK (length(archive) = 16),
    next       INTEGER NOT NULL CHECK (next >= 0), -- index of the next record to store
    total      INTEGER NOT NULL CHECK (total >= 1), -- records before the end record
    done       INTEGER NOT NULL DEFAULT 0 CHECK (done IN (0, 1)),
    messages   INTEGER NOT NULL DEFAULT 0 CHECK (messages >= 0), -- stored so far (new rows only)
    started_at INTEGER NOT NULL
) STRICT;
