-- 0014: an upload's record lives in the profile, written by a plan like
-- every other state: what survives a killed upload so that sending the same
-- file again resumes it (docs/reliability.md, "Files"). The record holds no
-- secret (the file key is derived from the identity key and the salt); the
-- path is sealed all the same, as any name a person chose.
CREATE TABLE upload (
    salt        BLOB    PRIMARY KEY CHECK (length(salt) = 32),
    recipient   TEXT    NOT NULL, -- a device address, or "group:" and the group ID in hex
    sealed_path BLOB    NOT NULL,
    size        INTEGER NOT NULL CHECK (size >= 0),
    mod_time    INTEGER NOT NULL,
    blob        BLOB    NOT NULL CHECK (length(blob) = 16),
    id          BLOB    NOT NULL CHECK (length(id) = 16),
    chunk_size  INTEGER NOT NULL CHECK (chunk_size > 0),
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX upload_recipient ON upload (recipient);
