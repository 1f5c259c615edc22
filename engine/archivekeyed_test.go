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
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var updateKeyedArchive = flag.Bool("update-keyed-archive", false, "write testdata/engine/archive-keyed-v2.txt (once: the vector is frozen)")

const keyedArchiveVectorFile = "../testdata/engine/archive-keyed-v2.txt"

var keyedArchiveKey = [32]byte{0x42, 0x43}

// keyedRecords is what the keyed vector archive holds: no account, the
// backup's other records, and a staged message last.
func keyedRecords() []wire.ArchiveRecord {
	recs := archiveRecords()[1:]
	return append(recs, wire.ArchiveStaged{Sender: "bob/1", ID: wire.LogicalID{4}, ReceivedAt: 13, Digest: [32]byte{5}, Frame: []byte{1, 2, 3}})
}

func writeKeyed(t testing.TB, recs []wire.ArchiveRecord) []byte {
	t.Helper()
	return writeKeyedAs(t, recs, wire.ArchiveKeyedVersion)
}

// writeKeyedAs is writeKeyed with the header's version.
func writeKeyedAs(t testing.TB, recs []wire.ArchiveRecord, version uint8) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := engine.NewKeyedArchiveWriterVersion(&buf, keyedArchiveKey, &countingReader{}, version)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readKeyed(b []byte, key [32]byte) ([]wire.ArchiveRecord, error) {
	r, err := engine.OpenKeyedArchive(bytes.NewReader(b), key)
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

// TestKeyedArchiveVector: the frozen keyed archive still opens to its
// records, and a writer with the same key and randomness writes its bytes.
func TestKeyedArchiveVector(t *testing.T) {
	b := writeKeyedAs(t, keyedRecords(), wire.ArchiveKeyedVersion1)
	if *updateKeyedArchive {
		doc := "# parley frozen keyed archive (engine/archive.go, header version 2: history at link time): the\n" +
			"# records of keyedRecords() in engine/archivekeyed_test.go under the key 42 43 00.. (32 bytes),\n" +
			"# ID bytes 00... FROZEN: these bytes never change.\n"
		if err := os.WriteFile(keyedArchiveVectorFile, []byte(doc+hex.EncodeToString(b)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(keyedArchiveVectorFile)
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
		t.Fatalf("the writer's bytes differ from the frozen keyed archive:\n got %x\nwant %x", b, frozen)
	}
	got, err := readKeyed(frozen, keyedArchiveKey)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, keyedRecords()) {
		t.Fatalf("records:\n got %+v\nwant %+v", got, keyedRecords())
	}
}

// TestKeyedArchiveRefusals: another key, a backup opened as keyed and the
// other way round, an account record in a keyed archive and a staged one
// in a backup, truncations and flipped bytes are refused with typed
// errors; an empty keyed archive is whole.
func TestKeyedArchiveRefusals(t *testing.T) {
	b := writeKeyed(t, keyedRecords())
	if _, err := readKeyed(b, [32]byte{1}); !errors.Is(err, engine.ErrArchiveDamaged) {
		t.Errorf("another key: %v", err)
	}
	if _, err := readArchive(b, archivePass); !errors.Is(err, engine.ErrArchiveVersion) {
		t.Errorf("a keyed archive opened as a backup: %v", err)
	}
	backup := writeArchive(t, archiveRecords())
	if _, err := readKeyed(backup, keyedArchiveKey); !errors.Is(err, engine.ErrArchiveVersion) {
		t.Errorf("a backup opened as keyed: %v", err)
	}
	for n := 0; n < len(b); n += 7 {
		if _, err := readKeyed(b[:n], keyedArchiveKey); !errors.Is(err, engine.ErrArchiveTruncated) && !errors.Is(err, engine.ErrArchiveDamaged) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	for i := 0; i < len(b); i += 5 {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, err := readKeyed(c, keyedArchiveKey); err == nil {
			t.Fatalf("byte %d flipped: opened", i)
		}
	}
	var buf bytes.Buffer
	w, err := engine.NewKeyedArchiveWriter(&buf, keyedArchiveKey, &countingReader{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(archiveRecords()[0]); err == nil {
		t.Error("an account record in a keyed archive was written")
	}
	end, err := w.Close()
	if err != nil || end.Records != 0 {
		t.Fatalf("an empty keyed archive: %+v, %v", end, err)
	}
	if got, err := readKeyed(buf.Bytes(), keyedArchiveKey); err != nil || len(got) != 0 {
		t.Fatalf("an empty keyed archive reads %v, %v", got, err)
	}
	var bw bytes.Buffer
	aw, err := engine.NewArchiveWriter(&bw, archivePass, testArchiveKDF, &countingReader{})
	if err != nil {
		t.Fatal(err)
	}
	if err := aw.Write(archiveRecords()[0]); err != nil {
		t.Fatal(err)
	}
	if err := aw.Write(keyedRecords()[len(keyedRecords())-1]); err == nil {
		t.Error("a staged record in a backup was written")
	}
}

// FuzzOpenKeyedArchive: whatever the bytes, reading a keyed archive ends
// in records, io.EOF or one of the archive errors.
func FuzzOpenKeyedArchive(f *testing.F) {
	f.Add(writeKeyed(f, keyedRecords()))
	f.Add([]byte("PARLEYBK\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := readKeyed(b, keyedArchiveKey)
		if err != nil && !errors.Is(err, engine.ErrArchiveDamaged) && !errors.Is(err, engine.ErrArchiveTruncated) &&
			!errors.Is(err, engine.ErrArchiveVersion) {
			t.Fatalf("error %v is none of the archive errors", err)
		}
	})
}

// TestArchiveKDFLimit: a header asking for more Argon2id work than the
// reader's limit (here the most the format allows, which would take
// minutes and 4 GiB) is refused at once, before any derivation, with an
// *ArchiveKDFError that is an ErrArchiveDamaged; within the limit the
// archive opens.
func TestArchiveKDFLimit(t *testing.T) {
	h, err := wire.EncodeArchiveHeader(wire.ArchiveHeader{Passes: wire.MaxArchiveKDFPasses, MemoryKiB: wire.MaxArchiveKDFMemoryKiB, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = engine.OpenArchive(bytes.NewReader(h), archivePass, engine.RestoreArchiveKDF)
	var kdf *engine.ArchiveKDFError
	if !errors.As(err, &kdf) || !errors.Is(err, engine.ErrArchiveDamaged) || kdf.Header.Passes != wire.MaxArchiveKDFPasses {
		t.Fatalf("an absurd KDF: %v, want an *ArchiveKDFError", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refusing took %v: it derived first", d)
	}
	if (engine.ArchiveKDF{Passes: 17}).Exceeds(engine.RestoreArchiveKDF) != true || engine.DefaultArchiveKDF.Exceeds(engine.RestoreArchiveKDF) {
		t.Fatal("Exceeds disagrees with RestoreArchiveKDF")
	}
	if _, err := readArchive(writeArchive(t, archiveRecords()), archivePass); err != nil {
		t.Fatalf("an archive within the limit: %v", err)
	}
}
