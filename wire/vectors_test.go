package wire_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// update rewrites the frozen vector files and the vector seeds of the fuzz
// corpora from the tables in these tests:
//
//	go test ./wire -run TestVectors -update
//
// Run it only when a format is first written. A committed vector never
// changes: a different byte means the format changed, and that needs a new
// version, not a new vector file.
var update = flag.Bool("update", false, "rewrite the frozen vectors in testdata/wire and their fuzz seeds (new formats only)")

// vectorDir holds the frozen vectors, one file per format.
const vectorDir = "../testdata/wire"

// A vector is a value built from fixed fields, its description as written in
// the vector file, and, frozen in that file, its bytes.
type vector[T any] struct {
	name string
	doc  string // the field values, one per line
	v    T
}

// format describes one byte format to the generic vector and strictness
// checks.
type format[T any] struct {
	file   string // in vectorDir
	title  string
	fuzz   string // the fuzz target whose corpus gets the vectors as seeds
	encode func(T) ([]byte, error)
	decode func([]byte) (T, error)
	// slack, for a format whose last field takes every remaining byte,
	// says by how many bytes a value's encoding can be cut and still
	// decode: those prefixes and extra trailing bytes decode as other
	// values.
	slack func(T) int
}

// checkVectors checks that every vector encodes to its frozen bytes, that
// the frozen bytes decode to the vector and re-encode to themselves, and
// that every truncation and a trailing byte are rejected.
func checkVectors[T any](t *testing.T, f format[T], vs []vector[T]) {
	t.Helper()
	encoded := make(map[string][]byte)
	for _, v := range vs {
		b, err := f.encode(v.v)
		if err != nil {
			t.Fatalf("encode vector %s: %v", v.name, err)
		}
		encoded[v.name] = b
	}
	if *update {
		writeVectors(t, f, vs, encoded)
	}
	frozen := readVectors(t, filepath.Join(vectorDir, f.file))
	if len(frozen) != len(vs) {
		t.Errorf("%s holds %d vectors, the table %d", f.file, len(frozen), len(vs))
	}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			want, ok := frozen[v.name]
			if !ok {
				t.Fatalf("vector %s is missing from %s", v.name, f.file)
			}
			if got := encoded[v.name]; !bytes.Equal(got, want) {
				t.Fatalf("encode:\n got %x\nwant %x (frozen)", got, want)
			}
			got, err := f.decode(want)
			if err != nil {
				t.Fatalf("decode frozen bytes: %v", err)
			}
			if !reflect.DeepEqual(got, v.v) {
				t.Fatalf("decode frozen bytes:\n got %+v\nwant %+v", got, v.v)
			}
			again, err := f.encode(got)
			if err != nil || !bytes.Equal(again, want) {
				t.Fatalf("re-encode: got %x, %v; want %x", again, err, want)
			}
			checkTruncations(t, f, v.v, want)
		})
	}
}

// checkTruncations decodes every prefix of b and b with a trailing byte: all
// are malformed, the empty input included, unless the format's last field
// takes the rest of the input.
func checkTruncations[T any](t *testing.T, f format[T], v T, b []byte) {
	t.Helper()
	valid := len(b) // the shortest prefix that decodes
	if f.slack != nil {
		valid -= f.slack(v)
	}
	for n := range len(b) {
		if n >= valid {
			roundTrip(t, f, b[:n])
			continue
		}
		wantReject(t, f.decode, b[:n], wire.ErrMalformed)
	}
	long := append(bytes.Clone(b), 0)
	if f.slack != nil {
		roundTrip(t, f, long)
	} else {
		wantReject(t, f.decode, long, wire.ErrMalformed)
	}
}

// roundTrip wants b to decode and re-encode to itself.
func roundTrip[T any](t *testing.T, f format[T], b []byte) {
	t.Helper()
	v, err := f.decode(b)
	if err != nil {
		t.Fatalf("decode %s: %v, want success", brief(b), err)
	}
	again, err := f.encode(v)
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("decode %s re-encodes as %s, %v", brief(b), brief(again), err)
	}
}

// wantReject wants decoding b to fail with want and to return a zero value.
func wantReject[T any](t *testing.T, decode func([]byte) (T, error), b []byte, want error) {
	t.Helper()
	got, err := decode(b)
	if !errors.Is(err, want) {
		t.Fatalf("decode %s: got error %v, want %v", brief(b), err, want)
	}
	if !reflect.ValueOf(&got).Elem().IsZero() {
		t.Fatalf("decode %s failed (%v) but returned %+v, want the zero value", brief(b), err, got)
	}
}

// wantEncodeError wants encoding v to fail with want and return no bytes.
func wantEncodeError[T any](t *testing.T, encode func(T) ([]byte, error), v T, want error) {
	t.Helper()
	b, err := encode(v)
	if !errors.Is(err, want) {
		t.Fatalf("encode: got error %v, want %v", err, want)
	}
	if b != nil {
		t.Fatalf("encode failed (%v) but returned %d bytes, want nil", err, len(b))
	}
}

// brief shows the start of b in failure messages.
func brief(b []byte) string {
	if len(b) <= 48 {
		return fmt.Sprintf("%x (%d bytes)", b, len(b))
	}
	return fmt.Sprintf("%x… (%d bytes)", b[:48], len(b))
}

func readVectors(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read frozen vectors: %v", err)
	}
	vs := make(map[string][]byte)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		name, h, ok := strings.Cut(s, " ")
		if !ok {
			t.Fatalf("%s:%d: want \"name hex\"", path, line)
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if _, dup := vs[name]; dup {
			t.Fatalf("%s:%d: vector %s twice", path, line, name)
		}
		vs[name] = b
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return vs
}

// writeVectors is the -update helper: it writes the vector file and the
// vectors as fuzz seeds.
// Even then a vector already in the file must keep its bytes: -update may
// add vectors and reword their comments, never change one.
func writeVectors[T any](t *testing.T, f format[T], vs []vector[T], encoded map[string][]byte) {
	t.Helper()
	path := filepath.Join(vectorDir, f.file)
	if _, err := os.Stat(path); err == nil {
		for name, old := range readVectors(t, path) {
			if b, ok := encoded[name]; ok && !bytes.Equal(b, old) {
				t.Fatalf("-update would change the frozen vector %s in %s: a format change needs a new version", name, path)
			}
		}
	}
	var w bytes.Buffer
	fmt.Fprintf(&w, "# parley frozen wire vectors: %s. Layout: docs/wire-format.md.\n", f.title)
	fmt.Fprintf(&w, "#\n")
	fmt.Fprintf(&w, "# FROZEN: these bytes never change. They were generated once with\n")
	fmt.Fprintf(&w, "#   go test ./wire -run TestVectors -update\n")
	fmt.Fprintf(&w, "# from the tables in wire/*_test.go; a changed byte is a new format version.\n")
	fmt.Fprintf(&w, "#\n")
	fmt.Fprintf(&w, "# One vector per line, \"name hex\", after comment lines listing the field\n")
	fmt.Fprintf(&w, "# values it was built from. \"bytes X..\" means a run X, X+1, X+2, ...\n")
	fmt.Fprintf(&w, "# (mod 256) of the field's length.\n")
	for _, v := range vs {
		fmt.Fprintf(&w, "\n")
		for _, l := range strings.Split(strings.TrimSpace(v.doc), "\n") {
			fmt.Fprintf(&w, "# %s\n", strings.TrimSpace(l))
		}
		fmt.Fprintf(&w, "%s %x\n", v.name, encoded[v.name])
	}
	if err := os.MkdirAll(vectorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "fuzz", f.fuzz)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		seed := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", encoded[v.name])
		if err := os.WriteFile(filepath.Join(dir, "vector-"+v.name), []byte(seed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// seq returns n bytes start, start+1, ... (mod 256).
func seq(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func seq16(start byte) (a [16]byte) { copy(a[:], seq(start, len(a))); return a }
func seq32(start byte) (a [32]byte) { copy(a[:], seq(start, len(a))); return a }
func seq64(start byte) (a [64]byte) { copy(a[:], seq(start, len(a))); return a }

func fill32(c byte) (a [32]byte) {
	for i := range a {
		a[i] = c
	}
	return a
}

func TestVectors(t *testing.T) {
	t.Run("frame", func(t *testing.T) { checkVectors(t, frameFormat, frameVectors()) })
	t.Run("envelope", func(t *testing.T) { checkVectors(t, envelopeFormat, envelopeVectors()) })
	t.Run("ratchet", func(t *testing.T) { checkVectors(t, ratchetFormat, ratchetVectors()) })
	t.Run("prekey", func(t *testing.T) { checkVectors(t, preKeyFormat, preKeyVectors()) })
	t.Run("bundle", func(t *testing.T) { checkVectors(t, bundleFormat, bundleVectors()) })
	t.Run("relay", func(t *testing.T) { checkVectors(t, relayFormat, relayVectors()) })
	t.Run("recovery", func(t *testing.T) { checkVectors(t, recoveryFormat, recoveryVectors()) })
}

// TestRetiredVectors: the vectors of formats that a newer version replaced
// stay in testdata, and each is refused with ErrUnsupportedVersion.
func TestRetiredVectors(t *testing.T) {
	for _, f := range []struct {
		file   string
		decode func([]byte) error
	}{
		{"envelope.txt", func(b []byte) error { _, err := wire.DecodeEnvelope(b); return err }},
		{"prekey.txt", func(b []byte) error { _, err := wire.DecodePreKeyMessage(b); return err }},
	} {
		vs := readVectors(t, filepath.Join(vectorDir, f.file))
		if len(vs) == 0 {
			t.Fatalf("%s holds no vectors", f.file)
		}
		for name, b := range vs {
			if err := f.decode(b); !errors.Is(err, wire.ErrUnsupportedVersion) {
				t.Errorf("%s %s: %v, want ErrUnsupportedVersion", f.file, name, err)
			}
		}
	}
}
