package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Plans in these tests are built by hand: the store never looks inside a
// session, identity or prekey record, so any bytes do; frames are real
// because the store decodes them.

var (
	self  = engine.MustParseAddress("alice/1")
	bob   = engine.MustParseAddress("bob/1")
	carol = engine.MustParseAddress("carol/2")
	// testNow is the store's clock in these tests.
	testNow = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	planAt  = time.Date(2026, 11, 2, 13, 0, 0, 0, time.UTC)
)

// fixture is a real profile whose failpoint hook a test can set.
type fixture struct {
	db   *DB
	dir  string
	hook engine.Failpoint
}

// newFixture creates a profile and, unless raw, bootstraps it as alice/1
// with signed prekey 1, KEM prekey 2 and one-time prekeys 3, 4 and 5.
func newFixture(tb testing.TB, raw bool) *fixture {
	tb.Helper()
	f := &fixture{dir: filepath.Join(tb.TempDir(), "profile")}
	db, err := Create(context.Background(), f.dir, testPassphrase, Options{
		KDF: testKDF,
		Failpoint: func(p string) error {
			if f.hook != nil {
				return f.hook(p)
			}
			return nil
		},
		Now: func() time.Time { return testNow },
	})
	if err != nil {
		tb.Fatalf("Create = %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	f.db = db
	if !raw {
		f.apply(tb, bootstrapPlan())
	}
	return f
}

func bootstrapPlan() engine.Bootstrap {
	return engine.Bootstrap{
		Self: self, RelayURL: "ws://relay.example", Identity: []byte("identity PLAINTEXT-MARKER-identity"),
		PreKeys: []engine.PreKeyRecord{
			{Kind: engine.PreKeySigned, ID: 1, Created: 100, Expires: 200, Record: []byte("spk 1")},
			{Kind: engine.PreKeyKEM, ID: 2, Created: 100, Expires: 200, Record: []byte("kem 2")},
			{Kind: engine.PreKeyOneTime, ID: 3, Record: []byte("otk 3")},
			{Kind: engine.PreKeyOneTime, ID: 4, Record: []byte("otk 4")},
			{Kind: engine.PreKeyOneTime, ID: 5, Record: []byte("otk 5")},
		},
	}
}

// apply applies p and fails the test on an error.
func (f *fixture) apply(tb testing.TB, p engine.Plan) engine.Receipt {
	tb.Helper()
	r, err := f.db.Apply(context.Background(), p)
	if err != nil {
		tb.Fatalf("Apply(%s) = %v", p.Kind(), err)
	}
	return r
}

// state is a digest of every row of every table, sqlite_sequence included:
// two equal states hold the same rows, byte for byte.
func (f *fixture) state(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	rows, err := f.db.sql.QueryContext(ctx, "SELECT name, sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE type = 'table' ORDER BY name")
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	keyed := map[string]bool{} // WITHOUT ROWID: read in key order
	for rows.Next() {
		var n string
		var noRowid bool
		if err := rows.Scan(&n, &noRowid); err != nil {
			tb.Fatal(err)
		}
		names = append(names, n)
		keyed[n] = noRowid
	}
	rows.Close()
	h := sha256.New()
	for _, n := range names {
		order := " ORDER BY rowid"
		if keyed[n] {
			order = ""
		}
		rows, err := f.db.sql.QueryContext(ctx, fmt.Sprintf("SELECT * FROM %q%s", n, order))
		if err != nil {
			tb.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				tb.Fatal(err)
			}
			fmt.Fprintf(h, "%s %#v\n", n, vals)
		}
		if err := rows.Err(); err != nil {
			tb.Fatal(err)
		}
		rows.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

func logicalID(b byte) wire.LogicalID {
	var id wire.LogicalID
	for i := range id {
		id[i] = b
	}
	id[15] = 0xee
	return id
}

func initiation(b byte) engine.InitiationID {
	var id engine.InitiationID
	for i := range id {
		id[i] = b
	}
	return id
}

func identityKey(b byte) engine.IdentityKey {
	var k engine.IdentityKey
	for i := range k.SigningKey {
		k.SigningKey[i], k.DHKey[i] = b, b+1
	}
	for i := range k.Signature {
		k.Signature[i] = b + 2
	}
	return k
}

// frameOf encodes an application frame; tb may be nil (in case tables).
func frameOf(_ testing.TB, id wire.LogicalID, body string) []byte {
	fr, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id, Body: []byte(body)})
	if err != nil {
		panic(err)
	}
	return fr
}

func sessionWrite(peer engine.Address, version uint64, tag string) engine.SessionWrite {
	return engine.SessionWrite{Peer: peer, Version: version, ID: initiation(7), AwaitingReply: version == 0,
		Record: []byte(fmt.Sprintf("session with %s after %d: %s", peer, version, tag))}
}

func envelopeTo(peer engine.Address) wire.Envelope {
	return wire.Envelope{Type: wire.EnvelopeRatchet, Sender: self.String(), Recipient: peer.String(), Payload: []byte("ciphertext")}
}

// sendPlan is a Send of body to peer prepared from session version (0: a
// first session, which pins identityKey(peer's first letter)).
func sendPlan(tb testing.TB, peer engine.Address, id wire.LogicalID, body string, version uint64) engine.Send {
	p := engine.Send{Recipient: peer, ID: id, Frame: frameOf(tb, id, body), Body: []byte(body), At: planAt,
		Session: sessionWrite(peer, version, "send "+body), Out: engine.Outgoing{Envelope: envelopeTo(peer), Owner: id}}
	if version == 0 {
		k := identityKey(peer.User[0])
		p.Pin = &k
	}
	return p
}

func retryPlan(peer engine.Address, id wire.LogicalID, version uint64) engine.Retry {
	return engine.Retry{Recipient: peer, ID: id, Session: sessionWrite(peer, version, "retry"),
		Out: engine.Outgoing{Envelope: envelopeTo(peer), Owner: id}}
}

func ackOut(peer engine.Address) *engine.Outgoing {
	return &engine.Outgoing{Envelope: envelopeTo(peer), IsAck: true}
}

// stage stages one envelope and returns its inbox row.
func (f *fixture) stage(tb testing.TB) int64 {
	tb.Helper()
	r := f.apply(tb, engine.Stage{Envelopes: []engine.StagedInput{{RelayRow: 42, Envelope: []byte("envelope")}}, At: planAt})
	return r.Rows[0]
}

func deliver(tb testing.TB, id wire.LogicalID, body string) engine.DeliverEffect {
	return engine.DeliverEffect{ID: id, Frame: frameOf(tb, id, body), Digest: sha256.Sum256([]byte(body)), At: planAt}
}

// receivePlan is a Receive on the session with peer at version.
func receivePlan(row int64, peer engine.Address, version uint64, e engine.FrameEffect) engine.Receive {
	return engine.Receive{StagedRow: row, Peer: peer, Session: sessionWrite(peer, version, "receive"), Effect: e}
}

// Setups shared by the tests: each builds on the bootstrapped profile.

var (
	idSent = logicalID(1) // alice's message to bob
	idRecv = logicalID(2) // bob's message to alice
)

// withSession sends "hello" to bob: bob pinned, session version 1, idSent
// pending.
func withSession(tb testing.TB, f *fixture) {
	f.apply(tb, sendPlan(tb, bob, idSent, "hello PLAINTEXT-MARKER-sent", 0))
}

// withInbound adds bob's message idRecv, pending: session version 2.
func withInbound(tb testing.TB, f *fixture) {
	withSession(tb, f)
	row := f.stage(tb)
	f.apply(tb, receivePlan(row, bob, 1, deliver(tb, idRecv, "hi PLAINTEXT-MARKER-received")))
}

// withCommitted commits idRecv: session version 3.
func withCommitted(tb testing.TB, f *fixture) {
	withInbound(tb, f)
	f.apply(tb, commitPlan(tb, 2))
}

func commitPlan(tb testing.TB, version uint64) engine.Finalize {
	sw := sessionWrite(bob, version, "ack")
	body := "hi PLAINTEXT-MARKER-received"
	return engine.Finalize{Sender: bob, ID: idRecv, Digest: sha256.Sum256([]byte(body)), Outcome: engine.OutcomeCommitted,
		Body: []byte(body), At: planAt, Session: &sw, Ack: ackOut(bob)}
}
