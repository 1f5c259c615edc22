package engine_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var updateArchive = flag.Bool("update-archive", false, "write testdata/engine/archive-v1.txt (once: the vector is frozen)")

const archiveVectorFile = "../testdata/engine/archive-v1.txt"

// testArchiveKDF is small: the tests are about the format, not the cost.
var testArchiveKDF = engine.ArchiveKDF{Passes: 1, MemoryKiB: 64, Threads: 1}

var archivePass = []byte("correct horse battery staple")

// countingReader yields 0, 1, 2, ... for the salt and the ID.
type countingReader struct{ n byte }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.n
		c.n++
	}
	return len(p), nil
}

func archiveList() wire.DeviceList {
	var e wire.DeviceEntry
	e.Number, e.State, e.Linked = 1, wire.DeviceActive, 1700000000
	e.SigningKey[0], e.DHKey[0] = 1, 2
	return wire.DeviceList{User: "alice", Generation: 1, Entries: []wire.DeviceEntry{e}}
}

// archiveRecords is what the vector archive holds, in order.
func archiveRecords() []wire.ArchiveRecord {
	id := wire.LogicalID{9}
	return []wire.ArchiveRecord{
		wire.ArchiveAccount{Key: [32]byte{0xa0}, List: archiveList(), Device: 1},
		wire.ArchiveContact{Address: "bob/1", Name: "Bob"},
		wire.ArchivePin{Address: "bob/1", Identity: []byte{1, 2, 3}, PinnedAt: 5},
		wire.ArchiveGroup{ID: wire.GroupID{7}, Name: "crew", CreatedAt: 6},
		wire.ArchiveMessage{Peer: "bob/1", Direction: 1, ID: wire.LogicalID{1}, At: 10, Body: []byte("hi")},
		wire.ArchiveMessage{Peer: "bob/1", Direction: 2, ID: wire.LogicalID{2}, At: 11, State: 2, Body: []byte("hello"),
			Extras: wire.ArchiveExtras{ReplyTo: &id}},
		wire.ArchiveGroupMessage{Group: wire.GroupID{7}, Sender: "bob/1", ID: wire.LogicalID{3}, At: 12, Body: []byte("yo")},
	}
}

func writeArchive(t testing.TB, recs []wire.ArchiveRecord) []byte {
	t.Helper()
	return writeArchiveFrom(t, recs, &countingReader{})
}

func writeArchiveFrom(t testing.TB, recs []wire.ArchiveRecord, rand io.Reader) []byte {
	t.Helper()
	return writeArchiveAs(t, recs, rand, wire.ArchiveVersion)
}

// writeArchiveAs is writeArchiveFrom with the header's version.
func writeArchiveAs(t testing.TB, recs []wire.ArchiveRecord, rand io.Reader, version uint8) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := engine.NewArchiveWriterVersion(&buf, archivePass, testArchiveKDF, rand, version)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	end, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := (wire.ArchiveEnd{Records: uint64(len(recs)), Messages: 3, Groups: 1}); len(recs) == 7 && end != want {
		t.Fatalf("end %+v, want %+v", end, want)
	}
	if w.Written() != int64(buf.Len()) {
		t.Fatalf("Written %d, file of %d bytes", w.Written(), buf.Len())
	}
	return buf.Bytes()
}

// readArchive reads b through and returns its records, or the first error.
func readArchive(b []byte, pass []byte) ([]wire.ArchiveRecord, error) {
	r, err := engine.OpenArchive(bytes.NewReader(b), pass, testArchiveKDF)
	if err != nil {
		return nil, err
	}
	var out []wire.ArchiveRecord
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
}

// TestArchiveVector: the frozen archive (version 1) still opens to its
// records, and a writer of version 1 with the same randomness writes its
// bytes.
func TestArchiveVector(t *testing.T) {
	b := writeArchiveAs(t, archiveRecords(), &countingReader{}, wire.ArchiveVersion1)
	if *updateArchive {
		doc := "# parley frozen archive (engine/archive.go, version 1): the records of archiveRecords() in\n" +
			"# engine/archive_test.go under the passphrase \"correct horse battery staple\", Argon2id 1 pass,\n" +
			"# 64 KiB, 1 thread, salt bytes 00.., ID bytes 10... FROZEN: these bytes never change.\n"
		if err := os.WriteFile(archiveVectorFile, []byte(doc+hex.EncodeToString(b)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(archiveVectorFile)
	if err != nil {
		t.Fatal(err)
	}
	var h string
	for _, l := range strings.Split(string(raw), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			h = l
		}
	}
	frozen, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, frozen) {
		t.Fatalf("the writer's bytes differ from the frozen archive:\n got %x\nwant %x", b, frozen)
	}
	got, err := readArchive(frozen, archivePass)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, archiveRecords()) {
		t.Fatalf("records:\n got %+v\nwant %+v", got, archiveRecords())
	}
}

// TestArchiveRefusals: a wrong passphrase, every truncation, every flipped
// byte, records reordered, dropped or repeated, and a newer version are each
// refused with their error.
func TestArchiveRefusals(t *testing.T) {
	b := writeArchive(t, archiveRecords())
	if _, err := readArchive(b, []byte("wrong")); !errors.Is(err, engine.ErrArchivePassphrase) {
		t.Errorf("wrong passphrase: %v", err)
	}
	newer := bytes.Clone(b)
	newer[8] = 2
	if _, err := readArchive(newer, archivePass); !errors.Is(err, engine.ErrArchiveVersion) {
		t.Errorf("version 2: %v", err)
	}
	if _, err := readArchive([]byte("hello, not an archive at all, but long enough to hold a header of eighty-three bytes"), archivePass); !errors.Is(err, engine.ErrArchiveDamaged) {
		t.Errorf("not an archive: %v", err)
	}
	for n := range len(b) {
		_, err := readArchive(b[:n], archivePass)
		if !errors.Is(err, engine.ErrArchiveTruncated) && !errors.Is(err, engine.ErrArchiveDamaged) {
			t.Fatalf("cut at %d of %d: %v, want truncated or damaged", n, len(b), err)
		}
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		_, err := readArchive(c, archivePass)
		if err == nil {
			t.Fatalf("byte %d flipped: read whole", i)
		}
		if !errors.Is(err, engine.ErrArchiveDamaged) && !errors.Is(err, engine.ErrArchivePassphrase) &&
			!errors.Is(err, engine.ErrArchiveTruncated) && !errors.Is(err, engine.ErrArchiveVersion) {
			t.Fatalf("byte %d flipped: untyped %v", i, err)
		}
	}
	if _, err := readArchive(append(bytes.Clone(b), 0), archivePass); !errors.Is(err, engine.ErrArchiveDamaged) {
		t.Errorf("a trailing byte: %v", err)
	}
	// Records moved: the sealed records of b, split and rejoined.
	recs := splitRecords(t, b)
	head := b[:wire.ArchiveHeaderSize]
	join := func(idx ...int) []byte {
		out := bytes.Clone(head)
		for _, i := range idx {
			out = append(out, recs[i]...)
		}
		return out
	}
	last := len(recs) - 1
	for name, c := range map[string][]int{
		"swapped":    {0, 2, 1, 3, 4, 5, 6, last},
		"dropped":    {0, 1, 2, 3, 4, 5, last},
		"repeated":   {0, 1, 1, 2, 3, 4, 5, 6, last},
		"end early":  {0, 1, last},
		"no end":     {0, 1, 2, 3, 4, 5, 6},
		"end twice":  {0, 1, 2, 3, 4, 5, 6, last, last},
		"end only":   {last},
		"first only": {0},
	} {
		_, err := readArchive(join(c...), archivePass)
		if !errors.Is(err, engine.ErrArchiveDamaged) && !errors.Is(err, engine.ErrArchiveTruncated) {
			t.Errorf("%s: %v, want damaged or truncated", name, err)
		}
	}
	// Another archive's record does not open in this one.
	other := writeArchiveFrom(t, archiveRecords()[:2], &countingReader{n: 100})
	mixed := append(join(0), splitRecords(t, other)[1]...)
	if _, err := readArchive(mixed, archivePass); !errors.Is(err, engine.ErrArchiveDamaged) {
		t.Errorf("a record of another archive: %v", err)
	}
}

// splitRecords cuts an archive's body into its length-prefixed records.
func splitRecords(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	rest := b[wire.ArchiveHeaderSize:]
	for len(rest) > 0 {
		n := 4 + (int(rest[0])<<24 | int(rest[1])<<16 | int(rest[2])<<8 | int(rest[3]))
		out = append(out, rest[:n])
		rest = rest[n:]
	}
	return out
}

// TestArchiveWriterOrder: the writer refuses records out of order.
func TestArchiveWriterOrder(t *testing.T) {
	w, err := engine.NewArchiveWriter(io.Discard, archivePass, testArchiveKDF, &countingReader{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(wire.ArchiveContact{Address: "bob/1", Name: "Bob"}); err == nil {
		t.Fatal("a contact before the account was written")
	}
	w, _ = engine.NewArchiveWriter(io.Discard, archivePass, testArchiveKDF, &countingReader{})
	recs := archiveRecords()
	if err := w.Write(recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(recs[4]); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(recs[1]); err == nil {
		t.Fatal("a contact after a message was written")
	}
	if _, err := engine.NewArchiveWriter(io.Discard, nil, testArchiveKDF, &countingReader{}); err == nil {
		t.Fatal("an empty passphrase was taken")
	}
}

// FuzzOpenArchive: whatever the bytes, reading ends in io.EOF or one of the
// four typed errors, never a panic.
func FuzzOpenArchive(f *testing.F) {
	b := writeArchive(f, archiveRecords())
	f.Add(b)                          // the whole vector archive
	f.Add(b[:wire.ArchiveHeaderSize]) // its header alone
	f.Add(b[:len(b)-1])               // cut by a byte
	f.Add(append(bytes.Clone(b), 1))  // a byte too many
	f.Fuzz(func(t *testing.T, in []byte) {
		_, err := readArchive(in, archivePass)
		if err != nil && !errors.Is(err, engine.ErrArchiveDamaged) && !errors.Is(err, engine.ErrArchivePassphrase) &&
			!errors.Is(err, engine.ErrArchiveTruncated) && !errors.Is(err, engine.ErrArchiveVersion) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
