package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestNoPlaintextAtRest sends, receives, commits and discards messages whose
// bodies carry unique markers, with sessions, identity and prekeys carrying
// markers too, and scans every file of the profile for them: while it is
// open (database, write-ahead log and its index) and after it was closed.
func TestNoPlaintextAtRest(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, true)
	marker := func(what string) string {
		b := make([]byte, 8)
		rand.Read(b)
		return "PLAINTEXT-MARKER-" + what + "-" + hex.EncodeToString(b)
	}
	var secrets []string
	secret := func(what string) string {
		s := marker(what)
		secrets = append(secrets, s)
		return s
	}
	sw := func(peer engine.Address, version uint64) engine.SessionWrite {
		w := sessionWrite(peer, version, "")
		w.Record = []byte(secret("session"))
		return w
	}

	f.apply(t, engine.Bootstrap{Self: self, RelayURL: "ws://relay", Identity: []byte(secret("identity")), PreKeys: []engine.PreKeyRecord{
		{Kind: engine.PreKeySigned, ID: 1, Record: []byte(secret("spk"))},
		{Kind: engine.PreKeyKEM, ID: 2, Record: []byte(secret("kem"))},
		{Kind: engine.PreKeyOneTime, ID: 3, Record: []byte(secret("otk"))},
	}})
	sent := sendPlan(t, bob, idSent, secret("sent"), 0)
	sent.Session = sw(bob, 0)
	f.apply(t, sent)
	version := uint64(1)
	for i, kept := range []bool{true, false, true} {
		id := logicalID(byte(10 + i))
		body := secret("received")
		r := f.apply(t, engine.Stage{Envelopes: []engine.StagedInput{{Envelope: []byte(secret("envelope"))}}, At: planAt})
		p := receivePlan(r.Rows[0], bob, version, deliver(t, id, body))
		p.Session = sw(bob, version)
		f.apply(t, p)
		version++
		fin := engine.Finalize{Sender: bob, ID: id, Digest: deliver(t, id, body).Digest, Outcome: engine.OutcomeDiscarded, Reason: engine.DiscardOther, At: planAt}
		if kept {
			fin.Outcome, fin.Reason, fin.Body = engine.OutcomeCommitted, 0, []byte(body)
		}
		if i < 2 {
			f.apply(t, fin)
		}
	}
	draft := secret("draft")
	f.apply(t, engine.SetDraft{Peer: bob, Text: draft})
	// One envelope stays staged, one is quarantined.
	f.stage(t)
	r := f.apply(t, engine.Stage{Envelopes: []engine.StagedInput{{Envelope: []byte(secret("quarantined"))}}, At: planAt})
	f.apply(t, engine.DropStaged{StagedRow: r.Rows[0], Reason: "malformed_frame", At: planAt})

	scan := func(when string) {
		t.Helper()
		entries, err := os.ReadDir(f.dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		control := false
		for _, e := range entries {
			names = append(names, e.Name())
			b, err := os.ReadFile(filepath.Join(f.dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if i := bytes.Index(b, []byte("PLAINTEXT-MARKER-")); i >= 0 {
				end := min(len(b), i+60)
				t.Errorf("%s: %s holds %q in clear", when, e.Name(), b[i:end])
			}
			// Addresses are in clear by design: a scan that does not find
			// them does not read where the data is.
			control = control || bytes.Contains(b, []byte(bob.String()))
		}
		if !control {
			t.Errorf("%s: no file holds %s in clear, want the scan to see the rows", when, bob)
		}
		t.Logf("%s: scanned %v", when, names)
	}
	// Reading the files while the store is open is safe here: no other
	// connection shares SQLite's locks on them.
	scan("open")
	if _, err := os.Stat(filepath.Join(f.dir, dbFile+"-wal")); err != nil {
		t.Errorf("no write-ahead log while open (%v): the scan would miss what it holds", err)
	}
	mustClose(t, f.db)
	scan("closed")

	// The records are there: the scan did not pass for want of them.
	f.db = mustOpen(t, f.dir)
	h, err := f.db.History(ctx, bob, 0, 10)
	if err != nil || len(h) != 2 {
		t.Fatalf("History = %d entries, %v; want the sent message and the committed one", len(h), err)
	}
	if d, err := f.db.Drafts(ctx); err != nil || d[bob] != draft {
		t.Errorf("Drafts = %q, %v; want the draft to %s", d, err, bob)
	}
	if m, err := f.db.Inbound(ctx, bob, logicalID(12)); err != nil || !bytes.HasPrefix(m.Body, []byte("PLAINTEXT-MARKER-received")) {
		t.Errorf("Inbound = %q, %v", m.Body, err)
	}
}

// TestSealedRecordMovedToAnotherRow copies sealed records between rows of the
// same table: each fails to open with ErrSealedRecord, and a bad inbox row
// does not stop the page it is in.
func TestSealedRecordMovedToAnotherRow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withInbound(t, f)
	f.apply(t, sendPlan(t, bob, logicalID(3), "second", 2))
	f.apply(t, engine.Stage{At: planAt, Envelopes: []engine.StagedInput{{Envelope: []byte("a")}, {Envelope: []byte("b")}, {Envelope: []byte("c")}}})

	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := f.db.sql.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("UPDATE outbound SET sealed_frame = (SELECT sealed_frame FROM outbound WHERE seq = 1) WHERE seq = 2")
	exec("UPDATE history SET sealed_body = (SELECT sealed_body FROM history WHERE seq = 1) WHERE seq = 2")
	exec("UPDATE inbox SET sealed = (SELECT sealed FROM inbox WHERE row = 2) WHERE row = 3")
	exec("UPDATE session SET sealed = (SELECT sealed_frame FROM outbound WHERE seq = 1)")
	exec("UPDATE inbound SET sealed_digest = sealed_frame")

	if _, err := f.db.Outbound(ctx, bob, logicalID(3)); !errors.Is(err, engine.ErrSealedRecord) {
		t.Errorf("Outbound of a record copied from another row = %v, want ErrSealedRecord", err)
	}
	if _, err := f.db.Outbound(ctx, bob, idSent); err != nil {
		t.Errorf("Outbound of the original = %v", err)
	}
	if _, err := f.db.History(ctx, bob, 0, 10); !errors.Is(err, engine.ErrSealedRecord) {
		t.Errorf("History with a moved body = %v, want ErrSealedRecord", err)
	}
	if _, err := f.db.Peer(ctx, bob); !errors.Is(err, engine.ErrSealedRecord) {
		t.Errorf("Peer with another kind of record = %v, want ErrSealedRecord", err)
	}
	if _, err := f.db.Inbound(ctx, bob, idRecv); !errors.Is(err, engine.ErrSealedRecord) {
		t.Errorf("Inbound with a frame as its digest = %v, want ErrSealedRecord", err)
	}
	staged, err := f.db.Staged(ctx, 0, 10)
	if err != nil || len(staged) != 3 {
		t.Fatalf("Staged = %d rows, %v; want 3 rows, the bad one marked", len(staged), err)
	}
	want := map[int64]string{2: "a", 3: "", 4: "c"} // rows 2 to 4: withInbound consumed row 1
	for _, s := range staged {
		bad := s.Row == 3
		if bad != errors.Is(s.Err, engine.ErrSealedRecord) || bad != (s.Envelope == nil) || string(s.Envelope) != want[s.Row] {
			t.Errorf("staged row %d = %q, %v; want %q and an error only for row 3", s.Row, s.Envelope, s.Err, want[s.Row])
		}
	}
	// A row that does not open can still be quarantined, verbatim.
	f.apply(t, engine.DropStaged{StagedRow: 3, Reason: engine.ErrorName(staged[1].Err), At: planAt})
	wantStaged(t, f, 2)
}
