-- 0004: the names this profile's owner gives to devices (nicknames), sealed
-- like every other record: they say whom the owner talks to.
CREATE TABLE contact (
    address     TEXT PRIMARY KEY,
    sealed_name BLOB NOT NULL
) STRICT;
