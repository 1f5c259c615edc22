package engine

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var updateStream = flag.Bool("update-stream", false, "write testdata/engine/file-stream.txt (once: the vector is frozen)")

const streamVectorFile = "../testdata/engine/file-stream.txt"

// streamManifest is the vector's file: 2500 bytes in chunks of 1024 (three
// chunks, the last of 452 bytes), key bytes 00..1f.
func streamManifest() (wire.FileManifest, []byte) {
	m := wire.FileManifest{Name: "v", Size: 2500, ChunkSize: 1024}
	m.Chunks = wire.FileChunks(m.Size, m.ChunkSize)
	for i := range m.Key {
		m.Key[i] = byte(i)
	}
	plain := make([]byte, m.Size)
	for i := range plain {
		plain[i] = byte(i * 7)
	}
	return m, plain
}

// sealAll returns the chunks of plain's ciphertext.
func sealAll(t *testing.T, m wire.FileManifest, plain []byte) [][]byte {
	t.Helper()
	s, err := newFileStream(m)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for i := uint32(0); i < m.Chunks; i++ {
		off := int64(i) * int64(m.ChunkSize)
		out = append(out, s.seal(nil, i, plain[off:off+int64(m.ChunkPlainSize(i))]))
	}
	return out
}

// openAll opens a blob cut at the manifest's chunk offsets, as a download
// does: the first failing chunk's error, or the plaintext.
func openAll(m wire.FileManifest, blob []byte) ([]byte, error) {
	s, err := newFileStream(m)
	if err != nil {
		return nil, err
	}
	if int64(len(blob)) > m.CipherSize() {
		return nil, &ChunkError{Index: m.Chunks, Err: ErrChunkSize}
	}
	var plain []byte
	for i := uint32(0); i < m.Chunks; i++ {
		off := chunkOffset(m, i)
		end := min(off+int64(m.ChunkPlainSize(i))+wire.FileTagSize, int64(len(blob)))
		if plain, err = s.open(plain, i, blob[min(off, end):end]); err != nil {
			return nil, err
		}
	}
	return plain, nil
}

func TestFileStreamRoundTrip(t *testing.T) {
	for _, size := range []int64{0, 1, 1023, 1024, 1025, 2048, 5000} {
		m, _ := streamManifest()
		m.Size, m.Chunks = size, wire.FileChunks(size, m.ChunkSize)
		plain := bytes.Repeat([]byte{0xa5}, int(size))
		blob := bytes.Join(sealAll(t, m, plain), nil)
		if int64(len(blob)) != m.CipherSize() {
			t.Fatalf("size %d: blob of %d bytes, want %d", size, len(blob), m.CipherSize())
		}
		got, err := openAll(m, blob)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("size %d: open = %d bytes, %v", size, len(got), err)
		}
	}
}

// TestFileStreamCorruptions: every way a relay can change a blob is caught
// at a chunk, with a typed error.
func TestFileStreamCorruptions(t *testing.T) {
	m, plain := streamManifest()
	chunks := sealAll(t, m, plain)
	join := func(cs ...[]byte) []byte { return bytes.Join(cs, nil) }
	other := m
	other.Key[0] ^= 1
	foreign := sealAll(t, other, plain)
	flipped := join(chunks...)
	flipped[1500] ^= 0x01
	for _, tt := range []struct {
		name  string
		blob  []byte
		index uint32
		want  error
	}{
		{"flip a bit", flipped, 1, ErrChunkAuth},
		{"truncate the last chunk", join(chunks...)[:m.CipherSize()-1], 2, ErrChunkSize},
		{"drop the last chunk", join(chunks[0], chunks[1]), 2, ErrChunkSize},
		{"swap two chunks", join(chunks[1], chunks[0], chunks[2]), 0, ErrChunkAuth},
		{"a chunk of another file", join(chunks[0], foreign[1], chunks[2]), 1, ErrChunkAuth},
		{"extend", join(chunks[0], chunks[1], chunks[2], chunks[2]), 3, ErrChunkSize},
		{"empty", nil, 0, ErrChunkSize},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := openAll(m, tt.blob)
			var ce *ChunkError
			if !errors.As(err, &ce) || !errors.Is(err, tt.want) || ce.Index != tt.index || got != nil {
				t.Fatalf("open = %d bytes, %v; want %v at chunk %d", len(got), err, tt.want, tt.index)
			}
		})
	}
	// Reordered chunks of equal size (a file of three full chunks).
	full := m
	full.Size = 3072
	fullChunks := sealAll(t, full, bytes.Repeat([]byte{1}, 3072))
	if _, err := openAll(full, join(fullChunks[2], fullChunks[0], fullChunks[1])); !errors.Is(err, ErrChunkAuth) {
		t.Fatalf("reordered chunks: %v, want ErrChunkAuth", err)
	}
	// The last-chunk flag: a stream cut after a full chunk, with a manifest
	// that agrees (a relay that also forged a shorter manifest could not,
	// but the flag holds without it), fails at its new last chunk.
	cut := m
	cut.Size, cut.Chunks = 2048, 2
	if _, err := openAll(cut, join(chunks[0], chunks[1])); !errors.Is(err, ErrChunkAuth) {
		t.Fatalf("stream cut at a chunk boundary: %v, want ErrChunkAuth", err)
	}
	// And the last chunk does not open as a middle one.
	long := m
	long.Size, long.Chunks = 3072+452, 4
	s, _ := newFileStream(long)
	if _, err := s.open(nil, 2, append(chunks[2], make([]byte, 1024-452)...)); !errors.Is(err, ErrChunkAuth) {
		t.Fatalf("last chunk opened as a middle one: %v", err)
	}
}

// TestFileStreamVector: the frozen ciphertext of streamManifest.
func TestFileStreamVector(t *testing.T) {
	m, plain := streamManifest()
	chunks := sealAll(t, m, plain)
	if *updateStream {
		if _, err := os.Stat(streamVectorFile); err == nil {
			t.Fatalf("%s exists: the vector is frozen", streamVectorFile)
		}
		var b strings.Builder
		b.WriteString("# parley frozen file stream vector: ChaCha20-Poly1305, nonce = 11-byte big-endian chunk index || last flag.\n")
		b.WriteString("# key bytes 00..1f, plaintext byte i = i*7 mod 256, 2500 bytes in chunks of 1024.\n# FROZEN: these bytes never change.\n")
		for i, c := range chunks {
			fmt.Fprintf(&b, "chunk-%d %x\n", i, c)
		}
		if err := os.WriteFile(streamVectorFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(streamVectorFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var i int
		var hexs string
		if _, err := fmt.Sscanf(line, "chunk-%d %s", &i, &hexs); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		want, err := hex.DecodeString(hexs)
		if err != nil || i >= len(chunks) || !bytes.Equal(chunks[i], want) {
			t.Fatalf("chunk %d:\n got %x\nwant %x (frozen) %v", i, chunks[min(i, len(chunks)-1)], want, err)
		}
		n++
	}
	if n != len(chunks) {
		t.Fatalf("%d chunks in the file, want %d", n, len(chunks))
	}
}

// TestFileOfHistory: the name and size of a file come back from its
// history body, whatever its name holds; a body that is not one, or whose
// name could not have been saved under, is no file.
func TestFileOfHistory(t *testing.T) {
	for _, name := range []string{"notes.txt", "a (1).txt", "odd (5 bytes, x) name.bin", "x"} {
		body := fileHistoryBody(wire.FileManifest{Name: name, Size: 1234, MediaType: "text/plain; charset=utf-8"})
		got, size, ok := FileOfHistory(body)
		if !ok || got != name || size != 1234 {
			t.Errorf("FileOfHistory(%q) = %q, %d, %v; want %q, 1234, true", body, got, size, ok, name)
		}
	}
	for _, body := range []string{"hello", "[file] x", "[file] x (12 bytes)", "[file]  (12 bytes, a)", "[file] ../x (12 bytes, a)",
		"[file] x (-1 bytes, a)", "[file] x (twelve bytes, a)", "[file] a\x1bb (1 bytes, a)"} {
		if name, size, ok := FileOfHistory([]byte(body)); ok {
			t.Errorf("FileOfHistory(%q) = %q, %d, true; want no file", body, name, size)
		}
	}
}
