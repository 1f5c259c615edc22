-- 0022: history at link time (issue 34, engine/linkhistory.go).
--
-- link_cut, on the device that holds the account key: one row per device
-- it linked, written in the transaction that stores the device list
-- naming the new device. From that transaction on, every message this
-- device sends or decides has a lane to the new device; what came before
-- travels in the history archive. history: 0 none, 1 all, 2 since (ns).
CREATE TABLE link_cut (
    device  INTEGER PRIMARY KEY CHECK (device >= 1),
    at      INTEGER NOT NULL,
    history INTEGER NOT NULL CHECK (history IN (0, 1, 2)),
    since   INTEGER NOT NULL DEFAULT 0
) STRICT;

-- On a linked device, the import of its history archive names where the
-- archive waits (its blob's manifest) and the archive's key, sealed: a
-- link killed during the download or the import goes on from them.
-- NULL for a restore's import, whose archive is a file the person names.
ALTER TABLE import_progress ADD COLUMN sealed_source BLOB;
