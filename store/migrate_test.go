package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"github.com/parley-chat/parley/wire"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/parley-chat/parley/engine"
)

func TestEmbeddedMigrations(t *testing.T) {
	ms, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if m.version != i+1 || strings.TrimSpace(m.sql) == "" {
			t.Errorf("migration %d = %s version %d, want version %d with SQL", i, m.name, m.version, i+1)
		}
	}
}

func TestLoadMigrationsRejects(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("SELECT 1;")}
	tests := []struct {
		name  string
		files []string
	}{
		{"empty", nil},
		{"gap", []string{"0001_a.sql", "0003_c.sql"}},
		{"repeat", []string{"0001_a.sql", "0001_b.sql"}},
		{"not from 1", []string{"0002_b.sql"}},
		{"short number", []string{"1_a.sql"}},
		{"not a number", []string{"000a_a.sql"}},
		{"no name", []string{"0001.sql"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"m/README": file}
			for _, f := range tt.files {
				fsys["m/"+f] = file
			}
			if ms, err := loadMigrations(fsys, "m"); err == nil {
				t.Errorf("loadMigrations(%v) = %d migrations, want an error", tt.files, len(ms))
			}
		})
	}
}

// fixtures insert representative rows into a profile at each schema version
// and check, after the profile was migrated to the newest version, that they
// survived. Adding migration N means adding fixture N (written for the schema
// at version N) and keeping the checks of the older ones true.
var fixtures = map[int]struct {
	insert func(t *testing.T, db *sql.DB, s *sealer)
	check  func(t *testing.T, db *DB)
}{
	1:  {insertFixtureV1, checkFixtureV1},
	2:  {insertFixtureV2, checkFixtureV2},
	3:  {insertFixtureV3, checkFixtureV3},
	4:  {insertFixtureV4, checkFixtureV4},
	5:  {insertFixtureV5, checkFixtureV5},
	6:  {insertFixtureV6, checkFixtureV6},
	7:  {insertFixtureV7, checkFixtureV7},
	8:  {insertFixtureV8, checkFixtureV8},
	9:  {insertFixtureV9, checkFixtureV9},
	10: {insertFixtureV10, checkFixtureV10},
	11: {insertFixtureV11, checkFixtureV11},
	12: {insertFixtureV12, checkFixtureV12},
	13: {insertFixtureV13, checkFixtureV13},
	14: {insertFixtureV14, checkFixtureV14},
	15: {insertFixtureV15, checkFixtureV15},
	16: {insertFixtureV16, checkFixtureV16},
	17: {insertFixtureV17, checkFixtureV17},
	18: {insertFixtureV18, checkFixtureV18},
	19: {insertFixtureV19, checkFixtureV19},
	20: {insertFixtureV20, checkFixtureV20},
	21: {insertFixtureV21, checkFixtureV21},
	22: {insertFixtureV22, checkFixtureV22},
	23: {insertFixtureV23, checkFixtureV23},
	24: {insertFixtureV24, checkFixtureV24},
	25: {insertFixtureV25, checkFixtureV25},
	26: {insertFixtureV26, checkFixtureV26},
	27: {insertFixtureV27, checkFixtureV27},
	28: {insertFixtureV28, checkFixtureV28},
	29: {insertFixtureV29, checkFixtureV29},
	30: {insertFixtureV30, checkFixtureV30},
	31: {insertFixtureV31, checkFixtureV31},
	32: {insertFixtureV32, checkFixtureV32},
}

// fixtureV20List is the device list fixture 20 holds for the fixture
// peer's person: two active devices, unsigned (the store checks only that
// it decodes).
var fixtureV20List = wire.DeviceList{User: "bob", Generation: 2, AccountKey: [32]byte{0x20}, Parent: [32]byte{0x19},
	Entries: []wire.DeviceEntry{{Number: 7, State: wire.DeviceActive}, {Number: 8, State: wire.DeviceActive}}}

// insertFixtureV20 is fixture 19 with bob's device list held (conversation
// bob/7), the fixture message's lane to bob/8, acknowledged, and a
// decision alice/2 told about a message from carol/2.
func insertFixtureV20(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV19(t, db, s)
	list, err := wire.EncodeDeviceList(fixtureV20List)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO peer_account VALUES ('bob', ?, 2, ?, ?, 20)", []any{fixtureV20List.AccountKey[:], list, fixturePeer}},
		{"INSERT INTO person_lane (recipient, id, conversation, own, state) VALUES ('bob/8', ?, ?, 0, 3)", []any{fixtureID, fixturePeer}},
		{"INSERT INTO kept_decision (sender, id, outcome, on_device, at) VALUES ('carol/2', ?, 1, 'alice/2', 20)", []any{fixtureID}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV20(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV19(t, db)
	ctx := context.Background()
	a, ok, err := db.PeerAccount(ctx, "bob")
	if err != nil || !ok || a.List.Generation != 2 || len(a.List.Entries) != 2 || a.Conversation.String() != fixturePeer {
		t.Fatalf("peer account %+v, %v, %v; want fixture 20's", a, ok, err)
	}
	lanes, err := db.PersonLanes(ctx, engine.MustParseAddress(fixturePeer), wire.LogicalID(fixtureID))
	if err != nil || len(lanes) != 1 || lanes[0].Recipient.String() != "bob/8" || lanes[0].State != engine.LaneAcknowledged {
		t.Fatalf("lanes %+v, %v; want fixture 20's", lanes, err)
	}
	kept, err := db.KeptDecisions(ctx, 10)
	if err == nil {
		// Fixture 20's, sent by carol/2 (a later fixture keeps more).
		kept = slices.DeleteFunc(kept, func(k engine.KeptDecision) bool { return k.Sender.String() != "carol/2" })
	}
	if err != nil || len(kept) != 1 || kept[0].On.String() != "alice/2" || kept[0].Outcome != engine.OutcomeCommitted {
		t.Fatalf("kept decisions %+v, %v; want fixture 20's", kept, err)
	}
}

// insertFixtureV21 is fixture 20 with a restore's import part way.
func insertFixtureV21(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV20(t, db, s)
	if _, err := db.Exec("INSERT INTO import_progress (archive, next, total, messages, started_at) VALUES (?, 7, 40, 5, 21)", bytes.Repeat([]byte{0x21}, 16)); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV21(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV20(t, db)
	st, ok, err := db.ImportState(context.Background(), [16]byte(bytes.Repeat([]byte{0x21}, 16)))
	if err != nil || !ok || st != (engine.ImportState{Next: 7, Total: 40, Messages: 5}) {
		t.Fatalf("import state %+v, %v, %v; want fixture 21's", st, ok, err)
	}
}

// insertFixtureV22 is fixture 21 with a link's cut and a linked device's
// import naming its source.
func insertFixtureV22(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV21(t, db, s)
	archive := bytes.Repeat([]byte{0x24}, 16)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO link_cut VALUES (3, 24, 2, 20)", nil},
		{"INSERT INTO import_progress (archive, next, total, messages, started_at, sealed_source) VALUES (?, 0, 9, 0, 24, ?)",
			[]any{archive, s.seal(kindImportSource, archive, []byte("source 24"))}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV22(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV21(t, db)
	ctx := context.Background()
	cut, ok, err := db.LinkCut(ctx, 3)
	if err != nil || !ok || cut.At.UnixNano() != 24 || cut.History != engine.HistorySince || cut.Since.UnixNano() != 20 {
		t.Fatalf("link cut %+v, %v, %v; want fixture 22's", cut, ok, err)
	}
	src, ok, err := db.ImportSource(ctx, [16]byte(bytes.Repeat([]byte{0x24}, 16)))
	if err != nil || !ok || string(src) != "source 24" {
		t.Fatalf("import source %q, %v, %v; want fixture 22's", src, ok, err)
	}
}

// fixtureV23ID is the message fixture 23's import brought.
var fixtureV23ID = wire.LogicalID{0x23}

// fixtureV23Peer is who sent the message fixture 23's import brought (not
// the fixture peer, whose history older checks count).
const fixtureV23Peer = "carol/1"

// insertFixtureV23 is fixture 22 with a received message and a group
// message that the linked device's import (fixture 22's) brought.
func insertFixtureV23(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV22(t, db, s)
	archive := bytes.Repeat([]byte{0x24}, 16)
	peer := engine.MustParseAddress(fixtureV23Peer)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO history (peer, direction, id, at, state, sealed_body, imported) VALUES (?, 1, ?, 23, 0, ?, ?)", []any{fixtureV23Peer, fixtureV23ID[:],
			s.seal(kindHistoryBody, historyKey(peer, engine.DirectionIn, fixtureV23ID), []byte("imported 23")), archive}},
		{"INSERT INTO group_history (grp, sender, id, at, sealed_body, imported) VALUES (?, ?, ?, 23, ?, ?)", []any{fixtureGroup[:], fixturePeer, fixtureV23ID[:],
			s.seal(kindGroupBody, groupBodyKey(fixtureGroup, fixturePeer, fixtureV23ID), []byte("group 23")), archive}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV23(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV22(t, db)
	ctx := context.Background()
	e, ok, err := db.HistoryEntry(ctx, engine.MustParseAddress(fixtureV23Peer), engine.DirectionIn, fixtureV23ID)
	if err != nil || !ok || string(e.Body) != "imported 23" || e.Imported == nil || !e.Imported.Link || e.Imported.At.UnixNano() != 24 {
		t.Fatalf("imported entry %+v (%+v), %v, %v; want fixture 23's, imported by a link at 24", e, e.Imported, ok, err)
	}
	if own, ok, err := db.HistoryEntry(ctx, engine.MustParseAddress(fixturePeer), engine.DirectionOut, wire.LogicalID(fixtureID)); err != nil || !ok || own.Imported != nil {
		t.Fatalf("an entry written here reads as %+v, %v, %v; want it not imported", own, ok, err)
	}
	page, err := db.GroupHistory(ctx, fixtureGroup, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range page {
		if g.ID == fixtureV23ID {
			found = g.Imported != nil && g.Imported.Link && string(g.Body) == "group 23"
		} else if g.Imported != nil {
			t.Errorf("group entry %x reads as imported", g.ID[:4])
		}
	}
	if !found {
		t.Fatalf("group history %+v; want fixture 23's imported entry", page)
	}
}

// fixtureV24ID is the message of the sent copy fixture 24 holds.
var fixtureV24ID = wire.LogicalID{0x24}

// insertFixtureV24 is fixture 23 with a sent copy from alice/2 (another
// device of this person) of a message to carol/3: its finalized record
// and its history entry, copied.
func insertFixtureV24(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV23(t, db, s)
	from, conv := engine.MustParseAddress("alice/2"), engine.MustParseAddress("carol/3")
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES ('alice/2', ?, 1, 0, 24, ?)", []any{fixtureV24ID[:],
			s.seal(kindFinalizedDigest, messageKey(from, fixtureV24ID), bytes.Repeat([]byte{0x24}, 32))}},
		{"INSERT INTO history (peer, direction, id, at, state, sealed_body) VALUES ('carol/3', 2, ?, 24, 4, ?)", []any{fixtureV24ID[:],
			s.seal(kindHistoryBody, historyKey(conv, engine.DirectionOut, fixtureV24ID), []byte("copy 24"))}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV24(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV23(t, db)
	ctx := context.Background()
	copies, err := db.SentCopiesFrom(ctx, engine.MustParseAddress("alice/2"), time.Unix(0, 0), 10)
	if err != nil || len(copies) != 1 || copies[0].ID != fixtureV24ID || copies[0].Conversation.String() != "carol/3" ||
		string(copies[0].Body) != "copy 24" || copies[0].At.UnixNano() != 24 {
		t.Fatalf("sent copies from alice/2: %+v, %v; want fixture 24's", copies, err)
	}
	if copies, err := db.SentCopiesFrom(ctx, engine.MustParseAddress("alice/2"), time.Unix(0, 25), 10); err != nil || len(copies) != 0 {
		t.Fatalf("sent copies from alice/2 since 25: %+v, %v; want none", copies, err)
	}
}

// fixtureV25ID is the group message fixture 25 committed, decided on
// bob/2.
var fixtureV25ID = wire.LogicalID{0x25}

// insertFixtureV25 is fixture 24 with a group message from the fixture
// peer committed here because bob/2 (another device of this person)
// decided: its finalized record names its group, its group entry the
// deciding device.
func insertFixtureV25(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV24(t, db, s)
	sender := engine.MustParseAddress(fixturePeer)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, grp) VALUES (?, ?, 1, 0, 25, ?, ?)", []any{fixturePeer, fixtureV25ID[:],
			s.seal(kindFinalizedDigest, messageKey(sender, fixtureV25ID), bytes.Repeat([]byte{0x25}, 32)), fixtureGroup[:]}},
		{"INSERT INTO group_history (grp, sender, id, at, sealed_body, decided_on) VALUES (?, ?, ?, 25, ?, 'alice/2')", []any{fixtureGroup[:], fixturePeer, fixtureV25ID[:],
			s.seal(kindGroupBody, groupBodyKey(fixtureGroup, fixturePeer, fixtureV25ID), []byte("group 25"))}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV25(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV24(t, db)
	ctx := context.Background()
	made, err := db.Decisions(ctx, time.Unix(0, 25), 10)
	// A commit contradicted by a sibling's discard (fixture 32) is read
	// whenever it was made.
	made = slices.DeleteFunc(made, func(d engine.MadeDecision) bool { return d.ID == fixtureV32ID })
	if err != nil || len(made) != 1 || made[0].ID != fixtureV25ID || made[0].Group == nil || *made[0].Group != fixtureGroup ||
		!made[0].InHistory || string(made[0].Body) != "group 25" || made[0].DecidedOn == nil || made[0].DecidedOn.String() != "alice/2" {
		t.Fatalf("decisions since 25: %+v, %v; want fixture 25's group commit, decided on alice/2", made, err)
	}
	page, err := db.GroupHistory(ctx, fixtureGroup, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range page {
		if on := g.DecidedOn; (g.ID == fixtureV25ID) != (on != nil && on.String() == "alice/2") {
			t.Errorf("group entry %x decided on %v; want alice/2 for fixture 25's alone", g.ID[:4], on)
		}
	}
}

// insertFixtureV19 is fixture 18 with an own sender chain for the fixture
// group at generation 1, announced to bob (acknowledged), and a chain bob
// announced here.
func insertFixtureV19(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV18(t, db, s)
	chain, theirs := bytes.Repeat([]byte{0x19}, 16), bytes.Repeat([]byte{0x91}, 16)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO own_chain VALUES (?, 1, ?, ?)", []any{fixtureGroup[:], chain, s.seal(kindOwnChain, ownChainKey(fixtureGroup, 1), []byte("own chain 19"))}},
		{"INSERT INTO chain_member VALUES (?, ?, ?, ?, 1)", []any{fixtureGroup[:], chain, fixturePeer, bytes.Repeat([]byte{0x1a}, 16)}},
		{"INSERT INTO received_chain VALUES (?, ?, ?, 1, ?)", []any{fixturePeer, theirs, fixtureGroup[:],
			s.seal(kindReceivedChain, receivedChainKey(fixturePeer, wire.ChainID(theirs)), []byte("their chain 19"))}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV19(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV18(t, db)
	ctx := context.Background()
	own, ok, err := db.OwnChain(ctx, fixtureGroup, 1)
	if err != nil || !ok || string(own.Record) != "own chain 19" || len(own.Members) != 1 || !own.Members[0].Acked ||
		own.Members[0].Member.String() != fixturePeer {
		t.Fatalf("own chain %+v, %v, %v; want fixture 19's", own, ok, err)
	}
	theirs, ok, err := db.ReceivedChain(ctx, engine.MustParseAddress(fixturePeer), wire.ChainID(bytes.Repeat([]byte{0x91}, 16)))
	if err != nil || !ok || string(theirs.Record) != "their chain 19" || theirs.Generation != 1 || theirs.Group != fixtureGroup {
		t.Fatalf("received chain %+v, %v, %v; want fixture 19's", theirs, ok, err)
	}
}

// insertFixtureV17 is fixture 16 with an account: its sealed key and list.
func insertFixtureV17(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV16(t, db, s)
	if _, err := db.Exec("INSERT INTO account VALUES (1, ?, ?)", s.seal(kindAccountKey, nil, bytes.Repeat([]byte{0x16}, 32)), []byte("list 16")); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV17(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV16(t, db)
	prof, err := db.Profile(context.Background())
	if err != nil || !bytes.Equal(prof.AccountKey, bytes.Repeat([]byte{0x16}, 32)) || string(prof.DeviceList) != "list 16" {
		t.Fatalf("account %x %q, %v; want fixture 17's", prof.AccountKey, prof.DeviceList, err)
	}
}

// insertFixtureV15 is fixture 14 with the sent message edited once (its
// original kept as version 0), a reaction to it, and the pending received
// message marked as a reaction.
func insertFixtureV15(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV14(t, db, s)
	peer := []byte(fixturePeer)
	for _, st := range []struct {
		q    string
		args []any
	}{
		{"INSERT INTO message_extra (peer, direction, id, action, reply_to, edits, deleted) VALUES (?, 2, ?, 0, NULL, 1, 0)", []any{fixturePeer, fixtureID}},
		{"INSERT INTO message_version VALUES (?, 2, ?, 0, 20, ?)", []any{fixturePeer, fixtureID,
			s.seal(kindMessageVersion, rowKey(peer, []byte{2}, fixtureID, rowKeyInt(0)), []byte("first"))}},
		{"INSERT INTO reaction (peer, direction, id, reactor, at, sealed_emoji) VALUES (?, 2, ?, ?, 21, ?)", []any{fixturePeer, fixtureID, fixturePeer,
			s.seal(kindReactionEmoji, rowKey(peer, []byte{2}, fixtureID, peer), []byte("\U0001F44D"))}},
		{"UPDATE inbound SET action = 4", nil},
	} {
		if _, err := db.Exec(st.q, st.args...); err != nil {
			t.Fatalf("%s: %v", st.q, err)
		}
	}
}

func checkFixtureV15(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV14(t, db)
	ctx := context.Background()
	peer := engine.MustParseAddress(fixturePeer)
	var id wire.LogicalID
	copy(id[:], fixtureID)
	e, ok, err := db.HistoryEntry(ctx, peer, engine.DirectionOut, id)
	if err != nil || !ok || e.Edits != 1 || len(e.Reactions) != 1 || e.Reactions[0].Emoji != "\U0001F44D" || e.Reactions[0].From != peer {
		t.Fatalf("entry %+v, %v, %v; want edited once with bob's reaction", e, ok, err)
	}
	vs, err := db.MessageVersions(ctx, peer, engine.DirectionOut, id)
	if err != nil || len(vs) != 1 || string(vs[0].Body) != "first" {
		t.Fatalf("versions %+v, %v; want the original", vs, err)
	}
}

// insertFixtureV14 is fixture 13 with an upload's record.
func insertFixtureV14(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV13(t, db, s)
	salt := bytes.Repeat([]byte{0x14}, 32)
	if _, err := db.Exec("INSERT INTO upload VALUES (?, 'bob/1', ?, 10, 20, ?, ?, 4096, 30)", salt,
		s.seal(kindUploadPath, salt, []byte("/home/a/photo.jpg")), bytes.Repeat([]byte{0x15}, 16), bytes.Repeat([]byte{0x16}, 16)); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV14(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV13(t, db)
	ups, err := db.Uploads(context.Background(), "bob/1")
	if err != nil || len(ups) != 1 || ups[0].Path != "/home/a/photo.jpg" || ups[0].Size != 10 || ups[0].ChunkSize != 4096 {
		t.Fatalf("uploads %+v, %v; want the fixture's", ups, err)
	}
}

// insertFixtureV12 is fixture 11: version 12 changed how finalized records
// and attempts are stored (WITHOUT ROWID) and dropped an index, not what a
// row holds.
func insertFixtureV12(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV11(t, db, s)
}

func checkFixtureV12(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV11(t, db)
	for _, table := range []string{"finalized", "attempt"} {
		var sql string
		if err := db.sql.QueryRow("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", table).Scan(&sql); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sql, "WITHOUT ROWID") {
			t.Errorf("table %s after migration: %s; want WITHOUT ROWID", table, sql)
		}
	}
	var n int
	if err := db.sql.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'history_peer_seq'").Scan(&n); err != nil || n != 0 {
		t.Errorf("history_peer_seq after migration: %d, %v; want dropped", n, err)
	}
}

// fixtureV6PastChains is a past chains record (its layout is the engine's;
// the store keeps it sealed and whole).
var fixtureV6PastChains = append([]byte{1}, append(bytes.Repeat([]byte{0x66}, 32), 0, 0)...)

// insertFixtureV6 is fixture 5 with a record of the session's past chains.
func insertFixtureV6(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV5(t, db, s)
	peer := engine.MustParseAddress(fixturePeer)
	if _, err := db.Exec("INSERT INTO past_chain (peer, sealed) VALUES (?, ?)", fixturePeer,
		s.seal(kindPastChains, sessionKey(peer), fixtureV6PastChains)); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV6(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV5(t, db)
	var sealed []byte
	if err := db.sql.QueryRow("SELECT sealed FROM past_chain WHERE peer = ?", fixturePeer).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	got, err := db.seal.open(kindPastChains, sessionKey(engine.MustParseAddress(fixturePeer)), sealed)
	if err != nil || !bytes.Equal(got, fixtureV6PastChains) {
		t.Fatalf("past chains %x, %v; want %x", got, err, fixtureV6PastChains)
	}
}

// insertFixtureV5 is fixture 4 with two attempts logged for a message.
func insertFixtureV5(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV4(t, db, s)
	peer := engine.MustParseAddress(fixturePeer)
	id := wire.LogicalID{0x5a}
	for n := int64(1); n <= 2; n++ {
		rec := make([]byte, attemptRecord)
		rec[0], rec[16], rec[17] = byte(n), byte(wire.EnvelopeRatchet), 0x77
		if _, err := db.Exec("INSERT INTO attempt (peer, id, n, at, sealed) VALUES (?, ?, ?, ?, ?)", fixturePeer, id[:], n, n*1000,
			s.seal(kindAttempt, attemptKey(peer, id, n), rec)); err != nil {
			t.Fatal(err)
		}
	}
}

func checkFixtureV5(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV4(t, db)
	got, err := db.Attempts(context.Background(), engine.MustParseAddress(fixturePeer), wire.LogicalID{0x5a})
	if err != nil || len(got) != 2 || got[1].N != 2 || got[1].Envelope[0] != 2 || got[1].Type != wire.EnvelopeRatchet || got[1].Initiation[0] != 0x77 {
		t.Fatalf("attempts %+v, %v; want two, the second envelope 02…, ratchet, on initiation 77…", got, err)
	}
}

// insertFixtureV4 is fixture 3 with a name given to the peer.
func insertFixtureV4(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV3(t, db, s)
	if _, err := db.Exec("INSERT INTO contact (address, sealed_name) VALUES (?, ?)", fixturePeer,
		s.seal(kindContactName, []byte(fixturePeer), []byte("Bob at work"))); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV4(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV3(t, db)
	got, err := db.Contacts(context.Background())
	if err != nil || got[engine.MustParseAddress(fixturePeer)] != "Bob at work" || len(got) != 1 {
		t.Fatalf("contacts %v, %v; want bob/7 named Bob at work", got, err)
	}
}

// insertFixtureV3 is fixture 2 with a received message that arrived before
// the sent one and entered the history after it (committed later).
func insertFixtureV3(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV2(t, db, s)
	id := bytes.Repeat([]byte{0x6b}, 16)
	if _, err := db.Exec("INSERT INTO history (peer, direction, id, at, state, sealed_body) VALUES (?, 1, ?, 8, 0, ?)",
		fixturePeer, id, s.seal(kindHistoryBody, rowKey([]byte(fixturePeer), []byte{1}, id), []byte("earlier"))); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV3(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV2(t, db)
	es, err := db.History(context.Background(), engine.MustParseAddress(fixturePeer), 0, 10)
	if err != nil || len(es) != 2 {
		t.Fatalf("history: %d entries, %v; want 2", len(es), err)
	}
	if string(es[0].Body) != "body" || string(es[1].Body) != "earlier" {
		t.Fatalf("history newest first by time: %q then %q, want body then earlier", es[0].Body, es[1].Body)
	}
	older, err := db.History(context.Background(), engine.MustParseAddress(fixturePeer), es[0].Seq, 10)
	if err != nil || len(older) != 1 || string(older[0].Body) != "earlier" {
		t.Fatalf("the page before the newest: %d entries, %v; want the earlier one", len(older), err)
	}
}

// insertFixtureV2 is fixture 1 with the replaced initiation a session reset
// records (migration 2).
func insertFixtureV2(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV1(t, db, s)
	if _, err := db.Exec("UPDATE peer SET replaces = ? WHERE address = ?", fixtureInitiation(6), fixturePeer); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV2(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV1(t, db)
	var got []byte
	if err := db.sql.QueryRow("SELECT replaces FROM peer WHERE address = ?", fixturePeer).Scan(&got); err != nil || !bytes.Equal(got, fixtureInitiation(6)) {
		t.Errorf("replaces = %x, %v; want %x", got, err, fixtureInitiation(6))
	}
}

var (
	fixturePeer = "bob/7"
	fixtureID   = bytes.Repeat([]byte{0x5a}, 16)
)

func fixtureInitiation(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func insertFixtureV1(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	peer := []byte(fixturePeer)
	stmts := []struct {
		q    string
		args []any
	}{
		{"INSERT INTO meta (k, v) VALUES ('address', CAST('alice/1' AS BLOB)), ('relay_url', CAST('ws://relay' AS BLOB))", nil},
		{"INSERT INTO identity VALUES (1, ?)", []any{s.seal(kindIdentity, nil, []byte("identity"))}},
		{"INSERT INTO signed_prekey VALUES (1, 3, 10, 20, ?), (2, 3, 10, 20, ?)", []any{
			s.seal(kindSignedPreKey, rowKey(rowKeyInt(1), rowKeyInt(3)), []byte("x25519")),
			s.seal(kindSignedPreKey, rowKey(rowKeyInt(2), rowKeyInt(3)), []byte("mlkem")),
		}},
		{"INSERT INTO one_time_prekey VALUES (4, 10, ?)", []any{s.seal(kindOneTimePreKey, rowKey(rowKeyInt(4)), []byte("otk"))}},
		{"INSERT INTO peer (address, pinned_identity, pinned_at, accepted_change_at) VALUES (?, x'02', 10, NULL)", []any{fixturePeer}},
		{"INSERT INTO session VALUES (?, 2, ?, 1, 11, ?)", []any{fixturePeer, fixtureInitiation(3), s.seal(kindSession, rowKey(peer), []byte("session"))}},
		{"INSERT INTO retired_initiation VALUES (?, ?, 3, 12)", []any{fixturePeer, fixtureInitiation(4)}},
		{"INSERT INTO outbound (recipient, id, created_at, sealed_frame) VALUES (?, ?, 13, ?)", []any{
			fixturePeer, fixtureID, s.seal(kindOutboundFrame, rowKey(peer, fixtureID), []byte("out frame")),
		}},
		{"INSERT INTO inbound (sender, id, received_at, sealed_digest, sealed_frame) VALUES (?, ?, 14, ?, ?)", []any{
			fixturePeer, fixtureID,
			s.seal(kindInboundDigest, rowKey(peer, fixtureID), bytes.Repeat([]byte{8}, 32)),
			s.seal(kindInboundFrame, rowKey(peer, fixtureID), []byte("in frame")),
		}},
		{"INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES (?, ?, 2, 1, 15, ?)", []any{
			fixturePeer, fixtureID, s.seal(kindFinalizedDigest, rowKey(peer, fixtureID), bytes.Repeat([]byte{9}, 32)),
		}},
		{"INSERT INTO history (peer, direction, id, at, state, sealed_body) VALUES (?, 2, ?, 16, 1, ?)", []any{
			fixturePeer, fixtureID, s.seal(kindHistoryBody, rowKey(peer, []byte{2}, fixtureID), []byte("body")),
		}},
		{"INSERT INTO inbox (received_at, relay_row, sealed) VALUES (17, 99, ?)", []any{
			s.seal(kindStaged, rowKey(rowKeyInt(1)), []byte("envelope")),
		}},
		{"INSERT INTO quarantine VALUES (5, 17, 18, 'malformed', ?)", []any{
			s.seal(kindStaged, rowKey(rowKeyInt(5)), []byte("bad envelope")),
		}},
	}
	for _, st := range stmts {
		if _, err := db.Exec(st.q, st.args...); err != nil {
			t.Fatalf("%s: %v", st.q, err)
		}
	}
}

func checkFixtureV1(t *testing.T, db *DB) {
	t.Helper()
	ctx := context.Background()
	st, err := db.settings(ctx)
	if want := (settings{engine.MustParseAddress("alice/1"), "ws://relay"}); err != nil || st != want {
		t.Errorf("settings() = %+v, %v; want %+v", st, err, want)
	}
	peer := []byte(fixturePeer)
	sealed := []struct {
		q      string
		kind   string
		rowKey []byte
		want   string
	}{
		{"SELECT sealed FROM identity", kindIdentity, nil, "identity"},
		{"SELECT sealed FROM signed_prekey WHERE kind = 2 AND id = 3", kindSignedPreKey, rowKey(rowKeyInt(2), rowKeyInt(3)), "mlkem"},
		{"SELECT sealed FROM one_time_prekey WHERE id = 4", kindOneTimePreKey, rowKey(rowKeyInt(4)), "otk"},
		{"SELECT sealed FROM session WHERE peer = 'bob/7' AND version = 2 AND awaiting_reply = 1", kindSession, rowKey(peer), "session"},
		{"SELECT sealed_frame FROM outbound WHERE recipient = 'bob/7' AND seq = 1", kindOutboundFrame, rowKey(peer, fixtureID), "out frame"},
		{"SELECT sealed_frame FROM inbound WHERE sender = 'bob/7' AND seq = 1", kindInboundFrame, rowKey(peer, fixtureID), "in frame"},
		{"SELECT sealed_digest FROM inbound WHERE sender = 'bob/7' AND seq = 1", kindInboundDigest, rowKey(peer, fixtureID), string(bytes.Repeat([]byte{8}, 32))},
		{"SELECT sealed_body FROM history WHERE peer = 'bob/7' AND direction = 2 AND state = 1", kindHistoryBody, rowKey(peer, []byte{2}, fixtureID), "body"},
		{"SELECT sealed FROM inbox WHERE row = 1 AND relay_row = 99", kindStaged, rowKey(rowKeyInt(1)), "envelope"},
		{"SELECT sealed FROM quarantine WHERE row = 5 AND reason = 'malformed'", kindStaged, rowKey(rowKeyInt(5)), "bad envelope"},
	}
	for _, tt := range sealed {
		var b []byte
		if err := db.sql.QueryRowContext(ctx, tt.q).Scan(&b); err != nil {
			t.Errorf("%s: %v", tt.q, err)
			continue
		}
		if got, err := db.seal.open(tt.kind, tt.rowKey, b); err != nil || string(got) != tt.want {
			t.Errorf("%s: opens as %q, %v; want %q", tt.q, got, err, tt.want)
		}
	}
	var n int
	if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM retired_initiation WHERE peer = 'bob/7' AND signed_prekey_id = 3").Scan(&n); err != nil || n != 1 {
		t.Errorf("retired initiations = %d, %v; want 1", n, err)
	}
	if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM finalized WHERE outcome = 2 AND reason = 1").Scan(&n); err != nil || n != 1 {
		t.Errorf("finalized = %d, %v; want 1", n, err)
	}
}

// profileAt builds in dir a profile at schema version v, as a build that knew
// only migrations 1..v would have created it, and returns its storage key's
// sealer and the database (to be closed before the profile is opened).
func profileAt(t *testing.T, dir string, v int) (*sealer, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, filepath.Join(dir, dbFile))
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := migrate(ctx, conn, migrations[:v]); err != nil {
		t.Fatalf("migrate to version %d: %v", v, err)
	}
	rec, err := newKDFRecord(testKDF)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, storageKeySize)
	rand.Read(key)
	s, err := newSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := wrapStorageKey(rec.wrappingSealer(testPassphrase), key)
	if _, err := conn.ExecContext(ctx, sqlPutMeta, metaKDF, rec.encode()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, sqlPutMeta, metaStorageKey, wrapped); err != nil {
		t.Fatal(err)
	}
	return s, raw
}

// TestMigrateFromEveryVersion builds a profile at every schema version,
// fills every table, opens it with this build (which migrates it to the
// newest version) and checks that the rows survived.
func TestMigrateFromEveryVersion(t *testing.T) {
	for v := 1; v <= len(migrations); v++ {
		t.Run("version "+strconv.Itoa(v), func(t *testing.T) {
			fx, ok := fixtures[v]
			if !ok {
				t.Fatalf("no fixture for schema version %d: add one to fixtures", v)
			}
			dir := t.TempDir()
			s, raw := profileAt(t, dir, v)
			fx.insert(t, raw, s)
			for _, table := range tables(t, raw) {
				var n int
				if err := raw.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil || n == 0 {
					t.Errorf("fixture %d leaves table %s empty (%v): give it a row", v, table, err)
				}
			}
			raw.Close()

			db := mustOpen(t, dir)
			if got, err := schemaVersion(context.Background(), db.sql); err != nil || got != len(migrations) {
				t.Fatalf("schema version after open = %d, %v; want %d", got, err, len(migrations))
			}
			fx.check(t, db)
			checkIntegrity(t, db.sql)
		})
	}
}

// TestMigrateFromEmpty migrates an empty database (version 0) to the newest
// schema, the path Create takes.
func TestMigrateFromEmpty(t *testing.T) {
	ctx := context.Background()
	raw := rawDB(t, filepath.Join(t.TempDir(), "x.db"))
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := migrate(ctx, conn, migrations); err != nil {
		t.Fatal(err)
	}
	if v, err := schemaVersion(ctx, conn); err != nil || v != len(migrations) {
		t.Errorf("version = %d, %v; want %d", v, err, len(migrations))
	}
	// Migrating again does nothing.
	if err := migrate(ctx, conn, migrations); err != nil {
		t.Errorf("second migrate = %v", err)
	}
}

func TestOpenVersionZero(t *testing.T) {
	dir := t.TempDir()
	raw := rawDB(t, filepath.Join(dir, dbFile))
	if _, err := raw.Exec("CREATE TABLE x (y INTEGER)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := Open(context.Background(), dir, testPassphrase, Options{}); !errors.Is(err, engine.ErrMalformedState) {
		t.Errorf("Open of a database without schema = %v, want ErrMalformedState", err)
	}
}

func TestOpenNewerSchema(t *testing.T) {
	dir := t.TempDir()
	mustClose(t, mustCreate(t, dir))
	raw := rawDB(t, filepath.Join(dir, dbFile))
	if _, err := raw.Exec("PRAGMA user_version = " + strconv.Itoa(len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before := dirDigest(t, dir)
	if _, err := Open(context.Background(), dir, testPassphrase, Options{}); !errors.Is(err, errNewerSchema) {
		t.Errorf("Open of a newer schema = %v, want errNewerSchema", err)
	}
	if after := dirDigest(t, dir); !sameProfileFiles(before, after) {
		t.Errorf("files after refusing a newer schema = %v, want unchanged %v", after, before)
	}
}

// TestMigrateMachinery runs made-up migrations: each applies whole or not at
// all, a failing one leaves the version where it was, a table rebuild under a
// foreign key works, and a step that breaks a foreign key is refused.
func TestMigrateMachinery(t *testing.T) {
	ctx := context.Background()
	fsys := fstest.MapFS{
		"m/0001_parent.sql": {Data: []byte(`
			CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT) STRICT;
			CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id)) STRICT;
			INSERT INTO parent VALUES (1, 'one');
			INSERT INTO child VALUES (10, 1);`)},
		// SQLite's table rebuild: needs foreign_keys off while it runs.
		"m/0002_rebuild.sql": {Data: []byte(`
			CREATE TABLE parent_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, extra INTEGER NOT NULL DEFAULT 0) STRICT;
			INSERT INTO parent_new (id, name) SELECT id, name FROM parent;
			DROP TABLE parent;
			ALTER TABLE parent_new RENAME TO parent;`)},
		"m/0003_fails.sql": {Data: []byte(`
			CREATE TABLE half (x INTEGER);
			INSERT INTO nosuch VALUES (1);`)},
		"m/0004_dangling.sql": {Data: []byte(`INSERT INTO child VALUES (11, 42);`)},
	}
	ms, err := loadMigrations(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, filepath.Join(t.TempDir(), "x.db"))
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	version := func() int {
		v, err := schemaVersion(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := migrate(ctx, conn, ms[:2]); err != nil {
		t.Fatalf("migrate 1..2 = %v", err)
	}
	var extra int
	if err := conn.QueryRowContext(ctx, "SELECT extra FROM parent JOIN child ON child.parent = parent.id WHERE child.id = 10").Scan(&extra); err != nil {
		t.Errorf("rebuilt parent lost its child: %v", err)
	}
	var fk int
	if err := conn.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys after migrating = %d, %v; want 1", fk, err)
	}

	if err := migrate(ctx, conn, ms[:3]); err == nil {
		t.Fatal("migrate with a failing step succeeded")
	}
	if got := version(); got != 2 {
		t.Errorf("version after a failing step = %d, want 2", got)
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'half'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the failing step left its table behind (%d, %v)", n, err)
	}

	dangling := []migration{ms[0], ms[1], {version: 3, name: "0003_dangling.sql", sql: string(fsys["m/0004_dangling.sql"].Data)}}
	err = migrate(ctx, conn, dangling)
	if err == nil || !strings.Contains(err.Error(), "foreign key") {
		t.Errorf("migrate with a dangling reference = %v, want a foreign key error", err)
	}
	if got := version(); got != 2 {
		t.Errorf("version after a refused step = %d, want 2", got)
	}

	if err := migrate(ctx, conn, ms[:1]); !errors.Is(err, errNewerSchema) {
		t.Errorf("migrate to an older set = %v, want errNewerSchema", err)
	}
}

// tables lists the tables of db other than SQLite's own.
func tables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func checkIntegrity(t *testing.T, db *sql.DB) {
	t.Helper()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check = %q, %v", ok, err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM pragma_foreign_key_check").Scan(&n); err != nil || n != 0 {
		t.Errorf("foreign_key_check = %d rows, %v; want none", n, err)
	}
}

// TestMigration25MarksDiscardsOfUnknownKind: migration 0025 gives every
// discard it finds the all-zero group (a group message's or a one-to-one
// one's, not known) and leaves commits without one.
func TestMigration25MarksDiscardsOfUnknownKind(t *testing.T) {
	dir := t.TempDir()
	s, raw := profileAt(t, dir, 24)
	insertFixtureV24(t, raw, s)
	raw.Close()
	db := mustOpen(t, dir)
	var discards, marked, commits, unmarked int
	if err := db.sql.QueryRow(`SELECT count(*) FILTER (WHERE outcome = 2), count(*) FILTER (WHERE outcome = 2 AND grp = zeroblob(16)),
		count(*) FILTER (WHERE outcome = 1), count(*) FILTER (WHERE outcome = 1 AND grp IS NULL) FROM finalized`).Scan(&discards, &marked, &commits, &unmarked); err != nil {
		t.Fatal(err)
	}
	if discards == 0 || commits == 0 || marked != discards || unmarked != commits {
		t.Fatalf("after 0025: %d discards (%d of unknown kind), %d commits (%d without a group); want every discard of unknown kind, no commit",
			discards, marked, commits, unmarked)
	}
}
