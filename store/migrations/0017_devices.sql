-- 0017: the account this device belongs to.
--
-- One row once the profile has an account: the account's Ed25519 signing
-- key (sealed; on the device that made the account, NULL on a device linked
-- later) and the latest device list this device holds, encoded as
-- wire.DeviceList. A profile made before this migration gets its row at its
-- first writable open (engine.EnsureAccount), in one transaction: a
-- migration cannot draw a key or seal it.
CREATE TABLE account (
    singleton   INTEGER PRIMARY KEY CHECK (singleton = 1),
    sealed_key  BLOB,
    device_list BLOB NOT NULL
) STRICT;
