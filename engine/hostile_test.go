package engine_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// oneTimeCount is how many one-time prekeys d holds on disk.
func (d *device) oneTimeCount() int {
	d.w.t.Helper()
	p, err := d.st.Profile(d.w.ctx)
	if err != nil {
		d.w.t.Fatal(err)
	}
	return p.OneTimeCount
}

// TestCollisionConsumesLosingOneTimePreKey: the winner of a collision
// deletes the one-time prekey that the losing initiation used, in the
// transaction that retires that initiation, as the loser deletes the one
// the winning initiation used. One-time prekeys never expire: a key left
// behind would stay on disk for good.
func TestCollisionConsumesLosingOneTimePreKey(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := startBoth(t, w)
	before := [2]int{alice.oneTimeCount(), bob.oneTimeCount()}
	w.net.Release(alice.addr)
	w.net.Release(bob.addr)
	ra, rb := alice.sync(), bob.sync()
	if hasError(ra, engine.ErrSessionCollision) == hasError(rb, engine.ErrSessionCollision) {
		t.Fatalf("want exactly one collision: %v / %v", errorsIn(ra), errorsIn(rb))
	}
	for i, d := range []*device{alice, bob} {
		if got := d.oneTimeCount(); got != before[i]-1 {
			t.Errorf("%s holds %d one-time prekeys after the collision, want %d (one used by the peer's initiation)", d.addr, got, before[i]-1)
		}
	}
	converge(t, alice, bob)
}

// sealedRecords reads every sealed record of d's profile that holds a key or
// a message body, as it is on disk now: prekeys, sessions and pending
// frames both ways. It reads through a connection of its own, behind the
// store's back.
func (d *device) sealedRecords() map[string]bool {
	d.w.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.dir, "parley.db")+"?mode=ro")
	if err != nil {
		d.w.t.Fatal(err)
	}
	defer db.Close()
	out := map[string]bool{}
	for _, q := range []string{
		"SELECT sealed FROM one_time_prekey", "SELECT sealed FROM signed_prekey", "SELECT sealed FROM session",
		"SELECT sealed_frame FROM inbound", "SELECT sealed_frame FROM outbound",
	} {
		rows, err := db.Query(q)
		if err != nil {
			d.w.t.Fatal(err)
		}
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				d.w.t.Fatal(err)
			}
			out[string(b)] = true
		}
		if err := rows.Close(); err != nil {
			d.w.t.Fatal(err)
		}
	}
	return out
}

// filesContain reports which of the records has its first or last 32 bytes
// anywhere in the files of d's profile.
func (d *device) filesContain(records map[string]bool) []string {
	d.w.t.Helper()
	var all []byte
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		d.w.t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(d.dir, e.Name()))
		if err != nil {
			d.w.t.Fatal(err)
		}
		all = append(all, b...)
	}
	var found []string
	for r := range records {
		if len(r) < 64 {
			continue
		}
		if bytes.Contains(all, []byte(r[:32])) || bytes.Contains(all, []byte(r[len(r)-32:])) {
			found = append(found, fmt.Sprintf("%x…", r[:8]))
		}
	}
	return found
}

// TestDeletedSecretsLeaveNoTrace: every prekey, session state and pending
// frame that a conversation deleted or replaced is gone from every byte of
// the profile's files once the profile is closed, and, while it is open,
// once the scrub ran. Before the scrub the old versions are still in the
// write-ahead log, which is why it exists. The scrub is held back here (an
// hour's delay) so that the log is seen before it on a machine of any
// speed; store.TestScrubRunsWithinItsDelay shows the scheduled scrub.
func TestDeletedSecretsLeaveNoTrace(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.scrubDelay = time.Hour
	alice, bob := w.device("alice/1"), w.device("bob/1")
	seen := [2]map[string]bool{{}, {}}
	snap := func() {
		for i, d := range []*device{alice, bob} {
			for r := range d.sealedRecords() {
				seen[i][r] = true
			}
		}
	}
	snap()
	for i := 0; i < 3; i++ {
		alice.send(bob, fmt.Sprintf("secret body %d", i))
		snap()
	}
	bob.sync()
	snap()
	bob.send(alice, "reply")
	snap()
	bob.commitAll()
	snap()
	alice.sync()
	snap()
	alice.commitAll()
	snap()
	bob.sync()
	snap()
	gone := func(i int, d *device) map[string]bool {
		now := d.sealedRecords()
		out := map[string]bool{}
		for r := range seen[i] {
			if !now[r] {
				out[r] = true
			}
		}
		if len(out) == 0 {
			t.Fatalf("%s deleted nothing; the test is broken", d.addr)
		}
		return out
	}
	aliceGone, bobGone := gone(0, alice), gone(1, bob)
	if found := bob.filesContain(bobGone); len(found) == 0 {
		t.Fatalf("before the scrub no deleted record of %s is left in its write-ahead log; the test would not see a failure", bob.addr)
	}
	// While open: once the scrub ran.
	if err := bob.st.Scrub(w.ctx); err != nil {
		t.Fatal(err)
	}
	if found := bob.filesContain(bobGone); len(found) > 0 {
		t.Fatalf("%d deleted records of %s still in its files after the scrub: %v", len(found), bob.addr, found)
	}
	// Once closed: at once.
	if err := alice.c.Close(); err != nil {
		t.Fatal(err)
	}
	alice.c = nil
	if found := alice.filesContain(aliceGone); len(found) > 0 {
		t.Fatalf("%d of %d deleted records of %s are still in its files after close: %v", len(found), len(aliceGone), alice.addr, found)
	}
}

// TestDelayedInitiationCannotBreakAConvergedSession: two devices collide,
// converge on the winning session and exchange messages; only then does the
// relay deliver the losing initiation, which it had withheld, to the winner.
// The winner keeps its established session (the late initiation names
// nothing it replaces), and messages keep flowing both ways. Both winners.
func TestDelayedInitiationCannotBreakAConvergedSession(t *testing.T) {
	wins := map[string]bool{}
	for i := 0; i < 64 && len(wins) < 2; i++ {
		w := newWorld(t)
		alice, bob := startBoth(t, w)
		winner, loser := alice, bob
		if bob.sessionID(alice).Compare(alice.sessionID(bob)) < 0 {
			winner, loser = bob, alice
		}
		wins[winner.addr.String()] = true
		withheld := w.net.TakeHeld(winner.addr) // the loser's initiation
		if len(withheld) != 1 {
			t.Fatalf("withheld %d envelopes, want the loser's one initiation", len(withheld))
		}
		w.net.Release(winner.addr)
		w.net.Release(loser.addr)
		converge(t, alice, bob)
		established := winner.sessionID(loser)
		if loser.sessionID(winner) != established {
			t.Fatal("the two sides did not converge on one session")
		}

		keys := winner.oneTimeCount()
		w.net.Inject(winner.addr, withheld[0])
		if res := winner.sync(); !hasError(res, engine.ErrStaleSessionInitiation) {
			t.Fatalf("the late initiation: %v, want stale", errorsIn(res))
		}
		if got := winner.oneTimeCount(); got != keys-1 {
			t.Fatalf("%s holds %d one-time prekeys after the late initiation, want %d: the key it used must go", winner.addr, got, keys-1)
		}
		if winner.sessionID(loser) != established {
			t.Fatal("a late, abandoned initiation replaced the established session")
		}
		winner.send(loser, "after, from the winner")
		loser.send(winner, "after, from the loser")
		converge(t, alice, bob)
		if got := loser.received(winner); len(got) != 2 || got[1] != "after, from the winner" {
			t.Fatalf("the loser's history %q", got)
		}
		if got := winner.received(loser); len(got) != 2 || got[1] != "after, from the loser" {
			t.Fatalf("the winner's history %q", got)
		}
	}
	if len(wins) < 2 {
		t.Fatalf("covered %v; want both winners", wins)
	}
}

// TestOneTimePreKeyHandedOutTwice: the relay gives bob's one-time prekey to
// alice and to carol. Bob accepts alice's initiation, which consumes it,
// and cannot accept carol's; he answers with a recovery request, carol sets
// up a fresh session from a new bundle and her message arrives, once.
func TestOneTimePreKeyHandedOutTwice(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	w.net.RepeatOneTime(bob.addr)
	alice.send(bob, "from alice")
	carol.send(bob, "from carol")
	res := bob.sync()
	var refused *engine.ReceiveResult
	for i, r := range res {
		if r.Sender == carol.addr && r.Kind == engine.ResultError {
			refused = &res[i]
		}
	}
	if refused == nil || !errors.Is(refused.Err, engine.ErrUnknownPreKey) || !refused.RecoveryRequested {
		t.Fatalf("bob's results %+v: want carol's initiation refused (unknown prekey) with a recovery request", res)
	}
	if r := carol.sync(); count(r, engine.ResultSessionReset) != 1 {
		t.Fatalf("carol's results %+v: want one session reset", r)
	}
	converge(t, bob, carol)
	converge(t, bob, alice)
	if got := bob.received(carol); len(got) != 1 || got[0] != "from carol" {
		t.Fatalf("bob's history from carol %q", got)
	}
	if got := bob.received(alice); len(got) != 1 || got[0] != "from alice" {
		t.Fatalf("bob's history from alice %q", got)
	}
}

// TestForgedOrReplayedRecoveryChangesNothing: a recovery request signed by
// another key is refused; one replayed after it did its work names a
// session that is gone, and changes nothing either.
func TestForgedOrReplayedRecoveryChangesNothing(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	w.net.RepeatOneTime(bob.addr)
	alice.send(bob, "from alice")
	carol.send(bob, "from carol")
	bob.sync()
	seen := w.net.Seen()
	request := seen[len(seen)-1] // bob's recovery request to carol
	env, err := wire.DecodeEnvelope(request)
	if err != nil || env.Type != wire.EnvelopeRecovery {
		t.Fatalf("the last envelope is %v (%v), want bob's recovery request", env.Type, err)
	}

	// Forged: the same request with one bit of its signature flipped.
	r, err := wire.DecodeRecoveryRequest(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	r.Signature[0] ^= 1
	forged := env
	forged.Payload, _ = wire.EncodeRecoveryRequest(r)
	raw, _ := wire.EncodeEnvelope(forged)
	w.net.Inject(carol.addr, raw)
	before := carol.sessionID(bob)
	res := carol.sync() // the forged copy first, then the real one
	if !hasError(res, engine.ErrBadSignature) || count(res, engine.ResultSessionReset) != 1 {
		t.Fatalf("carol's results %+v: want the forgery refused and one reset", res)
	}
	converge(t, bob, carol)
	after := carol.sessionID(bob)
	if after == before {
		t.Fatal("the genuine request did not reset the session")
	}
	// Replayed: the genuine request again.
	w.net.Inject(carol.addr, request)
	if res := carol.sync(); !hasError(res, engine.ErrStaleRecovery) {
		t.Fatalf("the replayed request: %+v, want stale", res)
	}
	if carol.sessionID(bob) != after {
		t.Fatal("a replayed recovery request changed the session")
	}
	carol.send(bob, "still fine")
	converge(t, bob, carol)
	if got := bob.received(carol); len(got) != 2 || got[1] != "still fine" {
		t.Fatalf("bob's history from carol %q", got)
	}
}

// copyProfile copies the files of a closed profile from src to dst.
func copyProfile(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestoredProfileNeverReusesAKey: alice's profile is copied, she sends
// a message, and the copy is restored: she is back at the same chain
// position and sends another plaintext there. The two ciphertexts must not
// share a key and nonce (their XOR would then be the XOR of the
// plaintexts). Afterwards the conversation still converges.
func TestRestoredProfileNeverReusesAKey(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello")
	converge(t, alice, bob)

	backup := filepath.Join(t.TempDir(), "backup")
	if err := alice.c.Close(); err != nil {
		t.Fatal(err)
	}
	copyProfile(t, alice.dir, backup)
	alice.open()
	first, second := "the first plaintext, sent before the restore", "another plaintext, sent after it"
	id1 := alice.send(bob, first)
	if err := alice.c.Close(); err != nil {
		t.Fatal(err)
	}
	copyProfile(t, backup, alice.dir)
	alice.open()
	id2 := alice.send(bob, second)

	seen := w.net.Seen()
	msg := func(raw []byte) wire.RatchetMessage {
		env, err := wire.DecodeEnvelope(raw)
		if err != nil || env.Type != wire.EnvelopeRatchet {
			t.Fatalf("envelope %v (%v), want a ratchet message", env.Type, err)
		}
		m, err := wire.DecodeRatchetMessage(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m1, m2 := msg(seen[len(seen)-2]), msg(seen[len(seen)-1])
	if m1.Header != m2.Header {
		t.Fatalf("headers %+v and %+v: the restore did not put alice back at the same chain position", m1.Header, m2.Header)
	}
	f1, _ := wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id1, Body: []byte(first)})
	f2, _ := wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id2, Body: []byte(second)})
	n := min(len(f1), len(f2))
	same := true
	for i := 0; i < n; i++ {
		if m1.Ciphertext[i]^m2.Ciphertext[i] != f1[i]^f2[i] {
			same = false
			break
		}
	}
	if same {
		t.Fatal("two plaintexts were encrypted under one key and nonce")
	}
	converge(t, alice, bob)
	got := bob.received(alice)
	if len(got) != 3 || got[0] != "hello" || got[1] != first || got[2] != second {
		t.Fatalf("bob's history %q", got)
	}
}

// TestForgedMessageOnAKnownChainAsksNothing: a relay that corrupts a message
// on the chain the recipient already receives on gets no recovery request
// out of it (the keys there are certain, so the failure is a forgery), and
// the session stays.
func TestForgedMessageOnAKnownChainAsksNothing(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello")
	converge(t, alice, bob)
	alice.send(bob, "one")
	bob.sync()
	alice.send(bob, "two")
	w.net.TamperLast(bob.addr)
	res := bob.sync()
	if !hasError(res, engine.ErrDecrypt) {
		t.Fatalf("bob's results %+v: want the forgery refused", res)
	}
	for _, r := range res {
		if r.RecoveryRequested {
			t.Fatalf("a forgery on a known chain asked for recovery: %+v", r)
		}
	}
	before := alice.sessionID(bob)
	alice.sync()
	if alice.sessionID(bob) != before {
		t.Fatal("the forgery reset alice's session")
	}
	converge(t, alice, bob)
	if got := bob.received(alice); len(got) != 3 {
		t.Fatalf("bob's history %q, want all three messages", got)
	}
}
