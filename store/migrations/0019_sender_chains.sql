-- 0019: sender chains (docs/protocol.md, "Sender chains"). own_chain keeps
-- this device's live chain for a group at a generation (one row: a rotation
-- replaces it), its record sealed as a session's is. chain_member records,
-- per member device, the announcement of that chain sent to it (its logical
-- ID, a pending lane of its own) and whether the member acknowledged it:
-- only then do the group's messages go to it by the chain. received_chain
-- keeps the chains other devices announced here, by sender and chain ID,
-- each record (the chain key at the next position, the signing key and the
-- skipped keys, bounded) sealed.
CREATE TABLE own_chain (
	grp           BLOB NOT NULL CHECK (length(grp) = 16),
	generation    INTEGER NOT NULL CHECK (generation >= 0),
	chain         BLOB NOT NULL CHECK (length(chain) = 16),
	sealed_record BLOB NOT NULL,
	PRIMARY KEY (grp, generation)
) WITHOUT ROWID;

CREATE TABLE chain_member (
	grp         BLOB NOT NULL CHECK (length(grp) = 16),
	chain       BLOB NOT NULL CHECK (length(chain) = 16),
	member      TEXT NOT NULL,
	announce_id BLOB NOT NULL CHECK (length(announce_id) = 16),
	acked       INTEGER NOT NULL DEFAULT 0 CHECK (acked IN (0, 1)),
	PRIMARY KEY (grp, chain, member)
) WITHOUT ROWID;

CREATE INDEX chain_member_announce ON chain_member (member, announce_id);

CREATE TABLE received_chain (
	sender        TEXT NOT NULL,
	chain         BLOB NOT NULL CHECK (length(chain) = 16),
	grp           BLOB NOT NULL CHECK (length(grp) = 16),
	generation    INTEGER NOT NULL CHECK (generation >= 0),
	sealed_record BLOB NOT NULL,
	PRIMARY KEY (sender, chain)
) WITHOUT ROWID;

CREATE INDEX received_chain_group ON received_chain (sender, grp, generation);
