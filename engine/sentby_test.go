package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// rawAction sends an action of content on target from d to the device
// to, under its own ID, as a content message of the device's own.
func rawAction(t *testing.T, w *world, d *device, to engine.Address, id wire.LogicalID, a wire.Action) {
	t.Helper()
	body, err := wire.EncodeAction(a)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := wire.EncodeContentMessage(wire.ContentMessage{ID: id, Content: a.Content, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.c.SendRawFrame(w.ctx, to, frame); err != nil {
		t.Fatal(err)
	}
}

// TestImportedHistoryNamesItsSender: bob/1's message reached alice before
// she linked alice/2, which holds it only from the link's history. The
// archive says bob/1 sent it (record kind 11), so on alice/2 as on
// alice/1 bob/1 edits and then deletes it, and bob/2's edit of it is
// refused (not_author). Before the fix alice/2 refused bob/1's edit and
// delete too (the import named no device): alice's devices diverged, and
// alice/2 kept showing a message its author deleted.
func TestImportedHistoryNamesItsSender(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	blobs, err := enginetest.NewBlobs(filepath.Join(w.dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	w.blobs = blobs
	alice.reopen() // with the blob store, which the link's archive goes by
	theirs := bob.enqueue(alice, "from the phone")
	settle(t, 6, alice, bob, bob2)
	alice.commitAll()
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	alice2, archived := w.linkWithHistory(alice, all, all)
	if !archived {
		t.Fatal("the link carried no history")
	}
	if err := alice2.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*device{bob, bob2} {
		if err := alice2.c.CheckPeer(w.ctx, d.addr); err != nil {
			t.Fatal(err)
		}
	}
	if _, held, err := alice2.c.PeerAccount(w.ctx, "bob"); err != nil || !held {
		t.Fatalf("alice/2 holds no list of bob's (%v)", err)
	}
	round := func() {
		for range 3 {
			alice2.sync()
			alice2.commitAll()
		}
	}
	rawAction(t, w, bob2, alice2.addr, wire.LogicalID{0xee}, wire.Action{Content: wire.ContentEdit, Target: theirs, Edit: 1, Text: []byte("the laptop's now")})
	round()
	if e := alice2.entry(bob, theirs); string(e.Body) != "from the phone" || e.Edits != 0 {
		t.Fatalf("alice/2's entry of bob/1's message after bob/2's edit: %q, %d edits; want unchanged", e.Body, e.Edits)
	}
	rawAction(t, w, bob, alice2.addr, wire.LogicalID{0xed}, wire.Action{Content: wire.ContentEdit, Target: theirs, Edit: 2, Text: []byte("from the phone, edited")})
	round()
	if e := alice2.entry(bob, theirs); string(e.Body) != "from the phone, edited" || e.Edits != 2 {
		t.Fatalf("alice/2's entry of bob/1's message after bob/1's edit: %q, %d edits; want the edit applied", e.Body, e.Edits)
	}
	rawAction(t, w, bob, alice2.addr, wire.LogicalID{0xec}, wire.Action{Content: wire.ContentDelete, Target: theirs})
	round()
	if e := alice2.entry(bob, theirs); !e.Deleted {
		t.Fatalf("alice/2's entry of bob/1's message after bob/1's delete: %q, not deleted", e.Body)
	}
	if n := alice2.pendingIn(); n != 0 {
		t.Fatalf("alice/2 holds %d messages, want every action decided", n)
	}
}

// TestSiblingReusingAnIDIsNoAuthor: a hostile bob/2 learns the ID of
// bob/1's message to alice and sends alice a message of its own under
// that ID, which she commits (her finalized record of (bob/2, ID); the
// conversation keeps bob/1's entry). bob/2's edit and delete of bob/1's
// message are refused all the same: the entry names bob/1 as the device
// that sent it. Before the fix the committed record passed for
// authorship and bob/2 edited bob/1's message on alice's device.
func TestSiblingReusingAnIDIsNoAuthor(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	theirs := bob.enqueue(alice, "from the phone")
	settle(t, 6, alice, bob, bob2)
	alice.commitAll()
	frame, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: theirs, Body: []byte("same ID, the laptop's")})
	if err != nil {
		t.Fatal(err)
	}
	if err := bob2.c.SendRawFrame(w.ctx, alice.addr, frame); err != nil {
		t.Fatal(err)
	}
	alice.sync()
	alice.commitAll()
	if seen, err := alice.st.Seen(w.ctx, bob2.addr, theirs); err != nil || !seen.Finalized || seen.Outcome != engine.OutcomeCommitted {
		t.Fatalf("alice's record of bob/2's message under bob/1's ID: %+v, %v; want it committed (the attack's premise)", seen, err)
	}
	rawAction(t, w, bob2, alice.addr, wire.LogicalID{0xee}, wire.Action{Content: wire.ContentEdit, Target: theirs, Edit: 1, Text: []byte("the laptop's now")})
	rawAction(t, w, bob2, alice.addr, wire.LogicalID{0xef}, wire.Action{Content: wire.ContentDelete, Target: theirs})
	for range 3 {
		alice.sync()
		alice.commitAll()
	}
	if e := alice.entry(bob, theirs); string(e.Body) != "from the phone" || e.Edits != 0 || e.Deleted {
		t.Fatalf("alice's entry of bob/1's message after bob/2's edit and delete: %q, %d edits, deleted %v; want unchanged", e.Body, e.Edits, e.Deleted)
	}
	if n := alice.pendingIn(); n != 0 {
		t.Fatalf("alice holds %d messages after bob/2's actions, want them discarded (not_author)", n)
	}
}

// TestRestoredHistoryNamesItsSender: a backup of alice/1 holding bob/1's
// message, restored into a fresh device, names bob/1 as the device that
// sent it (record kind 11): bob/1's delete applies there, bob/2's edit
// is refused (not_author). Before the fix the restored entry named no
// device, and the restored device refused bob/1's delete.
func TestRestoredHistoryNamesItsSender(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	theirs := bob.enqueue(alice, "from the phone")
	settle(t, 6, alice, bob, bob2)
	alice.commitAll()
	var backup bytes.Buffer
	if _, err := alice.c.Backup(w.ctx, &backup, archivePass, testArchiveKDF, nil); err != nil {
		t.Fatal(err)
	}
	chk, err := engine.CheckArchive(bytes.NewReader(backup.Bytes()), archivePass, testArchiveKDF)
	if err != nil {
		t.Fatal(err)
	}
	restored := w.device("alice/2")
	if _, err := restored.st.Apply(w.ctx, engine.ImportStart{Archive: chk.ID, Next: 1, Total: chk.End.Records, At: w.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	ar, err := engine.OpenArchive(bytes.NewReader(backup.Bytes()), archivePass, testArchiveKDF)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.ImportArchive(w.ctx, restored.st, ar, 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*device{bob, bob2} {
		if err := restored.c.CheckPeer(w.ctx, d.addr); err != nil {
			t.Fatal(err)
		}
	}
	round := func() {
		for range 3 {
			restored.sync()
			restored.commitAll()
		}
	}
	rawAction(t, w, bob2, restored.addr, wire.LogicalID{0xee}, wire.Action{Content: wire.ContentEdit, Target: theirs, Edit: 1, Text: []byte("the laptop's now")})
	round()
	if e := restored.entry(bob, theirs); string(e.Body) != "from the phone" || e.Edits != 0 {
		t.Fatalf("the restored entry of bob/1's message after bob/2's edit: %q, %d edits; want unchanged", e.Body, e.Edits)
	}
	rawAction(t, w, bob, restored.addr, wire.LogicalID{0xed}, wire.Action{Content: wire.ContentDelete, Target: theirs})
	round()
	if e := restored.entry(bob, theirs); !e.Deleted {
		t.Fatalf("the restored entry of bob/1's message after bob/1's delete: %q, not deleted", e.Body)
	}
	if n := restored.pendingIn(); n != 0 {
		t.Fatalf("the restored device holds %d messages, want every action decided", n)
	}
}

// TestSiblingReusingAnUnnamedEntrysIDIsNoAuthor is
// TestSiblingReusingAnIDIsNoAuthor with bob/1's entry naming no device
// (received before entries named it) and alice's record of bob/1's
// message gone (pruned): bob/2's message under the same ID is then the
// only committed record of it. bob/2's edit and delete are refused all
// the same (not_author): an entry naming nobody in the person's
// conversation is nobody's to change. Before the fix the committed
// record of bob/2 passed for authorship.
func TestSiblingReusingAnUnnamedEntrysIDIsNoAuthor(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	theirs := bob.enqueue(alice, "from the phone")
	settle(t, 6, alice, bob, bob2)
	alice.commitAll()
	alice.execSQL(fmt.Sprintf("UPDATE history SET sent_by = NULL WHERE id = x'%x'; DELETE FROM finalized WHERE sender = '%s' AND id = x'%x'",
		theirs[:], bob.addr, theirs[:]))
	frame, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: theirs, Body: []byte("same ID, the laptop's")})
	if err != nil {
		t.Fatal(err)
	}
	if err := bob2.c.SendRawFrame(w.ctx, alice.addr, frame); err != nil {
		t.Fatal(err)
	}
	alice.sync()
	alice.commitAll()
	if seen, err := alice.st.Seen(w.ctx, bob2.addr, theirs); err != nil || !seen.Finalized || seen.Outcome != engine.OutcomeCommitted {
		t.Fatalf("alice's record of bob/2's message under bob/1's ID: %+v, %v; want it committed (the attack's premise)", seen, err)
	}
	rawAction(t, w, bob2, alice.addr, wire.LogicalID{0xee}, wire.Action{Content: wire.ContentEdit, Target: theirs, Edit: 1, Text: []byte("the laptop's now")})
	rawAction(t, w, bob2, alice.addr, wire.LogicalID{0xef}, wire.Action{Content: wire.ContentDelete, Target: theirs})
	for range 3 {
		alice.sync()
		alice.commitAll()
	}
	if e := alice.entry(bob, theirs); string(e.Body) != "from the phone" || e.Edits != 0 || e.Deleted {
		t.Fatalf("alice's entry of bob/1's message after bob/2's edit and delete: %q, %d edits, deleted %v; want unchanged", e.Body, e.Edits, e.Deleted)
	}
	if n := alice.pendingIn(); n != 0 {
		t.Fatalf("alice holds %d messages after bob/2's actions, want them discarded (not_author)", n)
	}
}

// TestArchiveVersionHoldsMessageBy: a backup and a keyed archive this
// build writes carry the header version that may hold record kind 11
// (wire.ArchiveVersion 3, wire.ArchiveKeyedVersion 4), so that a build
// knowing only versions 1 and 2 refuses them at the header
// (ErrArchiveVersion: "restore it with a newer parley") instead of
// calling a good archive damaged at its first kind-11 record. Both read
// back here, and a kind-11 record in an archive of version 1 or 2 is
// damage. Before the fix the writers wrote versions 1 and 2 whatever the
// records.
func TestArchiveVersionHoldsMessageBy(t *testing.T) {
	by := wire.ArchiveMessage{Peer: "bob/1", SentBy: "bob/2", Direction: 1, ID: wire.LogicalID{9}, At: 14, Body: []byte("by")}
	recs := append(archiveRecords()[:1:1], by)
	b := writeArchive(t, recs)
	if b[8] != wire.ArchiveVersion || wire.ArchiveVersion == wire.ArchiveVersion1 {
		t.Fatalf("a backup's header version %d, want %d (after %d)", b[8], wire.ArchiveVersion, wire.ArchiveVersion1)
	}
	if got, err := readArchive(b, archivePass); err != nil || len(got) != 2 || got[1].ArchiveKind() != wire.ArchiveKindMessageBy {
		t.Fatalf("the backup reads back as %+v, %v", got, err)
	}
	old := writeArchiveAs(t, recs, &countingReader{}, wire.ArchiveVersion1)
	if _, err := readArchive(old, archivePass); !errors.Is(err, engine.ErrArchiveDamaged) {
		t.Fatalf("kind 11 in a version-1 backup: %v, want ErrArchiveDamaged", err)
	}
	k := writeKeyed(t, []wire.ArchiveRecord{by})
	if k[8] != wire.ArchiveKeyedVersion || wire.ArchiveKeyedVersion == wire.ArchiveKeyedVersion1 {
		t.Fatalf("a keyed archive's header version %d, want %d (after %d)", k[8], wire.ArchiveKeyedVersion, wire.ArchiveKeyedVersion1)
	}
	if got, err := readKeyed(k, keyedArchiveKey); err != nil || len(got) != 1 {
		t.Fatalf("the keyed archive reads back as %+v, %v", got, err)
	}
	if _, err := readKeyed(writeKeyedAs(t, []wire.ArchiveRecord{by}, wire.ArchiveKeyedVersion1), keyedArchiveKey); !errors.Is(err, engine.ErrArchiveDamaged) {
		t.Fatalf("kind 11 in a version-2 keyed archive: %v, want ErrArchiveDamaged", err)
	}
	for _, v := range []byte{2, 4, 5} {
		c := bytes.Clone(b)
		c[8] = v
		if _, err := readArchive(c, archivePass); !errors.Is(err, engine.ErrArchiveVersion) {
			t.Errorf("a backup of version %d: %v, want ErrArchiveVersion", v, err)
		}
	}
	for _, v := range []byte{1, 3, 5} {
		c := bytes.Clone(k)
		c[8] = v
		if _, err := readKeyed(c, keyedArchiveKey); !errors.Is(err, engine.ErrArchiveVersion) {
			t.Errorf("a keyed archive of version %d: %v, want ErrArchiveVersion", v, err)
		}
	}
}
