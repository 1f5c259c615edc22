package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var manifestFormat = format[wire.FileManifest]{
	file:   "file-manifest.txt",
	title:  "file manifest (the body of content type 2, version 1)",
	fuzz:   "FuzzDecodeManifest",
	encode: wire.EncodeManifest,
	decode: wire.DecodeManifest,
}

var contentFormat = format[wire.ContentMessage]{
	file:   "content-message.txt",
	title:  "content frame (frame version 1, kind 6)",
	fuzz:   "FuzzDecodeContentMessage",
	encode: wire.EncodeContentMessage,
	decode: wire.DecodeContentMessage,
}

func manifestVectors() []vector[wire.FileManifest] {
	return []vector[wire.FileManifest]{
		{
			name: "report",
			doc: `manifest, size 100000, chunk size 65536, 2 chunks, key bytes 00.., blob bytes 40..,
				digest bytes 80.., name "report.pdf", media type "application/pdf"`,
			v: wire.FileManifest{Name: "report.pdf", Size: 100000, MediaType: "application/pdf", ChunkSize: 65536, Chunks: 2,
				Key: seq32(0x00), Blob: seq16(0x40), Digest: seq32(0x80)},
		},
		{
			name: "empty",
			doc: `manifest, size 0, chunk size 1024, 1 chunk, key all ff, blob all 00, digest all 11,
				name "e", no media type`,
			v: wire.FileManifest{Name: "e", ChunkSize: 1024, Chunks: 1, Key: fill32(0xff), Digest: fill32(0x11)},
		},
	}
}

func contentVectors() []vector[wire.ContentMessage] {
	return []vector[wire.ContentMessage]{
		{
			name: "file",
			doc:  `content frame (kind 6), ID bytes 00.., content file (2), body "hi"`,
			v:    wire.ContentMessage{ID: seq16(0x00), Content: wire.ContentFile, Body: []byte("hi")},
		},
	}
}

func TestFileVectors(t *testing.T) {
	t.Run("file-manifest", func(t *testing.T) { checkVectors(t, manifestFormat, manifestVectors()) })
	t.Run("content-message", func(t *testing.T) { checkVectors(t, contentFormat, contentVectors()) })
}

// TestManifestRefuses: each rule of checkManifest, at the encoder and the
// decoder, and the boundaries of each limit.
func TestManifestRefuses(t *testing.T) {
	ok := manifestVectors()[0].v
	long := strings.Repeat("a", wire.MaxFileNameSize)
	for _, tt := range []struct {
		name  string
		edit  func(*wire.FileManifest)
		valid bool
	}{
		{"longest name", func(m *wire.FileManifest) { m.Name = long }, true},
		{"name over the limit", func(m *wire.FileManifest) { m.Name = long + "a" }, false},
		{"slash", func(m *wire.FileManifest) { m.Name = "a/b" }, false},
		{"backslash", func(m *wire.FileManifest) { m.Name = `a\b` }, false},
		{"dot dot", func(m *wire.FileManifest) { m.Name = ".." }, false},
		{"escape", func(m *wire.FileManifest) { m.Name = "a\x1b[2Jb" }, false},
		{"empty name", func(m *wire.FileManifest) { m.Name = "" }, false},
		{"media type with a newline", func(m *wire.FileManifest) { m.MediaType = "text/plain\n" }, false},
		{"longest media type", func(m *wire.FileManifest) { m.MediaType = strings.Repeat("x", wire.MaxMediaTypeSize) }, true},
		{"media type over the limit", func(m *wire.FileManifest) { m.MediaType = strings.Repeat("x", wire.MaxMediaTypeSize+1) }, false},
		{"smallest chunk", func(m *wire.FileManifest) { m.ChunkSize, m.Chunks = wire.MinFileChunkSize, 98 }, true},
		{"chunk under the limit", func(m *wire.FileManifest) { m.ChunkSize, m.Chunks = wire.MinFileChunkSize-1, 98 }, false},
		{"largest chunk", func(m *wire.FileManifest) { m.ChunkSize, m.Chunks = wire.MaxFileChunkSize, 1 }, true},
		{"chunk over the limit", func(m *wire.FileManifest) { m.ChunkSize, m.Chunks = wire.MaxFileChunkSize+1, 1 }, false},
		{"one chunk too many", func(m *wire.FileManifest) { m.Chunks = 3 }, false},
		{"one chunk too few", func(m *wire.FileManifest) { m.Chunks = 1 }, false},
		{"largest size", func(m *wire.FileManifest) { m.Size, m.Chunks = wire.MaxManifestFileSize, 1<<24 }, true},
		{"size over the limit", func(m *wire.FileManifest) { m.Size, m.Chunks = wire.MaxManifestFileSize+1, 1<<24+1 }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := ok
			tt.edit(&m)
			b, err := wire.EncodeManifest(m)
			if tt.valid != (err == nil) {
				t.Fatalf("EncodeManifest: %v, want valid=%v", err, tt.valid)
			}
			if !tt.valid {
				if !errors.Is(err, wire.ErrMalformed) {
					t.Fatalf("EncodeManifest: %v, want ErrMalformed", err)
				}
				return
			}
			got, err := wire.DecodeManifest(b)
			if err != nil || got != m {
				t.Fatalf("DecodeManifest = %+v, %v; want %+v", got, err, m)
			}
		})
	}
	b, _ := wire.EncodeManifest(ok)
	b[0] = 2
	if _, err := wire.DecodeManifest(b); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Fatalf("manifest version 2: %v, want ErrUnsupportedVersion", err)
	}
}

func TestCleanFileName(t *testing.T) {
	for in, want := range map[string]string{
		"report.pdf":             "report.pdf",
		"../../etc/passwd":       "_.._etc_passwd",
		".bashrc":                "bashrc",
		"a\x00b\nc":              "a_b_c",
		"\x1b]0;pwn\x07":         "_]0;pwn_",
		"C:\\x":                  "C__x",
		"":                       "file",
		"...":                    "file",
		"\xff\xfe":               "_",
		"é ü":                    "é ü",
		"  spaced  ":             "spaced",
		strings.Repeat("é", 200): strings.Repeat("é", 127),
	} {
		if got := wire.CleanFileName(in); got != want {
			t.Errorf("CleanFileName(%q) = %q, want %q", in, got, want)
		}
		if got := wire.CleanFileName(want); got != want {
			t.Errorf("CleanFileName is not idempotent on %q: %q", want, got)
		}
	}
}

func TestContentMessageRefuses(t *testing.T) {
	for _, c := range []wire.ContentType{0, wire.ContentText, 7} {
		if _, err := wire.EncodeContentMessage(wire.ContentMessage{Content: c}); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("content type %d: %v, want ErrMalformed", c, err)
		}
	}
	b, _ := wire.EncodeContentMessage(contentVectors()[0].v)
	b[18] = byte(wire.ContentText)
	if _, err := wire.DecodeContentMessage(b); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("content text in kind 6: %v, want ErrMalformed", err)
	}
	if k, err := wire.PeekFrameKind(b); err != nil || k != wire.FrameContent {
		t.Fatalf("PeekFrameKind = %d, %v; want %d", k, err, wire.FrameContent)
	}
	if _, err := wire.DecodeFrame(b); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("DecodeFrame of kind 6: %v, want ErrMalformed (kind 1 is frozen)", err)
	}
	big := wire.ContentMessage{Content: wire.ContentFile, Body: make([]byte, wire.MaxGroupBodySize+1)}
	if _, err := wire.EncodeContentMessage(big); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Fatalf("body over the limit: %v", err)
	}
	big.Body = big.Body[:wire.MaxGroupBodySize]
	if b, err := wire.EncodeContentMessage(big); err != nil || len(b) > wire.MaxFrameSize {
		t.Fatalf("largest body: %d bytes, %v", len(b), err)
	}
	g := wire.GroupMessage{Content: wire.ContentFile, Body: []byte("m")}
	gb, err := wire.EncodeGroupMessage(g)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := wire.DecodeGroupMessage(gb); err != nil || !bytes.Equal(got.Body, g.Body) || got.Content != wire.ContentFile {
		t.Fatalf("group file message: %+v, %v", got, err)
	}
}

func FuzzDecodeManifest(f *testing.F) {
	// A valid manifest and its first byte changed (another version).
	f.Add(mustEncode(wire.EncodeManifest, manifestVectors()[0].v))
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRoundTrip(t, b, wire.DecodeManifest, wire.EncodeManifest) })
}

func FuzzDecodeContentMessage(f *testing.F) {
	// A file content frame, and a text one (refused: text is kind 1).
	f.Add(mustEncode(wire.EncodeContentMessage, contentVectors()[0].v))
	f.Add(mustHex("010600000000000000000000000000000000010000000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeContentMessage, wire.EncodeContentMessage)
	})
}
