package relaystore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// schemaVersion is stored in PRAGMA user_version.
const schemaVersion = 6

// migrations[v] brings a database of version v to version v+1, in the
// transaction that opens it.
var migrations = map[int]string{
	// Who each envelope is charged to (nobody, for the envelopes already
	// held), and the running totals per scope in place of the per-mailbox
	// ones.
	1: `
ALTER TABLE registrations ADD COLUMN ip TEXT NOT NULL DEFAULT '';
CREATE INDEX registrations_by_ip ON registrations (ip);
ALTER TABLE envelopes ADD COLUMN sender TEXT NOT NULL DEFAULT '';
ALTER TABLE envelopes ADD COLUMN ip TEXT NOT NULL DEFAULT '';
ALTER TABLE envelopes ADD COLUMN accepted INTEGER NOT NULL DEFAULT 0;
CREATE TABLE usage (
	scope     TEXT NOT NULL,
	key       TEXT NOT NULL,
	envelopes INTEGER NOT NULL,
	bytes     INTEGER NOT NULL,
	PRIMARY KEY (scope, key)
) STRICT;
INSERT INTO usage SELECT 'mailbox', recipient, envelopes, bytes FROM mailboxes;
INSERT INTO usage SELECT 'sender', recipient || ' ', envelopes, bytes FROM mailboxes;
INSERT INTO usage SELECT 'total', '', sum(envelopes), sum(bytes) FROM mailboxes HAVING count(*) > 0;
DROP TABLE mailboxes`,
	// Each envelope's ID, so that its sender can be told when it leaves the
	// mailbox. The rows already held take it from their envelope, where it
	// sits after the version and type bytes (docs/wire-format.md). The
	// expiry sweep reads the envelopes oldest first.
	2: `
ALTER TABLE envelopes ADD COLUMN envelope_id BLOB NOT NULL DEFAULT x'';
UPDATE envelopes SET envelope_id = substr(envelope, 3, 16) WHERE length(envelope) >= 18;
CREATE INDEX envelopes_by_accepted ON envelopes (accepted)`,
	// Whether each envelope is charged to the room for strangers (none of
	// those already held), the peers each owner accepts and the senders
	// it blocks (peers.go).
	3: `
ALTER TABLE envelopes ADD COLUMN stranger INTEGER NOT NULL DEFAULT 0;
CREATE TABLE accepted_peers (
	owner TEXT NOT NULL,
	peer  TEXT NOT NULL,
	seen  INTEGER NOT NULL,
	PRIMARY KEY (owner, peer)
) STRICT;
CREATE INDEX accepted_peers_by_seen ON accepted_peers (seen);
CREATE TABLE blocked_senders (
	owner  TEXT NOT NULL,
	sender TEXT NOT NULL,
	since  INTEGER NOT NULL,
	PRIMARY KEY (owner, sender)
) STRICT`,
	// The latest device list of each account (devicelist.go).
	4: deviceListsTable,
	// Payloads that several mailboxes share, kept once (AppendItem.Shared).
	5: `
ALTER TABLE envelopes ADD COLUMN payload INTEGER NOT NULL DEFAULT 0;
CREATE TABLE payloads (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	payload BLOB NOT NULL,
	refs    INTEGER NOT NULL
) STRICT`,
}

// deviceListsTable holds the latest device list of each user, with the IP
// its first generation came from (the quota of DeviceListsPerIP).
const deviceListsTable = `
CREATE TABLE IF NOT EXISTS device_lists (
	user       TEXT PRIMARY KEY,
	generation INTEGER NOT NULL CHECK (generation >= 1),
	parent     BLOB NOT NULL CHECK (length(parent) = 32),
	digest     BLOB NOT NULL CHECK (length(digest) = 32),
	list       BLOB NOT NULL,
	ip         TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS device_lists_by_ip ON device_lists (ip)`

// migrate brings a database of version from to schemaVersion.
func migrate(ctx context.Context, tx *sql.Tx, from int) error {
	for v := from; v < schemaVersion; v++ {
		for _, stmt := range strings.Split(migrations[v], ";") {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to version %d: %w", v+1, err)
			}
		}
	}
	_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
	return err
}
