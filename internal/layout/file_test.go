package layout

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

func TestShown(t *testing.T) {
	body, err := wire.EncodeManifest(wire.FileManifest{Name: "notes.txt", Size: 3 << 20, MediaType: "text/plain",
		ChunkSize: wire.MinFileChunkSize, Chunks: wire.FileChunks(3<<20, wire.MinFileChunkSize)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		content wire.ContentType
		body    []byte
		want    string
	}{
		{wire.ContentText, []byte("hello"), "hello"},
		{wire.ContentFile, body, "[file] notes.txt · 3.0 MiB · text/plain"},
		{wire.ContentFile, []byte{1, 2}, "[file] (unreadable manifest)"},
	} {
		if got := string(Shown(c.content, c.body)); got != c.want {
			t.Errorf("Shown(%d, %q) = %q, want %q", c.content, c.body, got, c.want)
		}
	}
	for n, want := range map[int64]string{512: "512 B", 3 << 10: "3.0 KiB", 20 << 20: "20.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
	if strings.Contains(string(Shown(wire.ContentFile, body)), "\x00") {
		t.Error("a manifest's bytes reached the screen")
	}
}

// TestStored: a file in the history reads as a waiting one does, its size
// in the same unit; any other body is left as it is.
func TestStored(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[file] holiday-video.mp4 (20971520 bytes, video/mp4)", "[file] holiday-video.mp4 · 20.0 MiB · video/mp4"},
		{"[file] a (b) c (512 bytes, text/plain)", "[file] a (b) c · 512 B · text/plain"},
		{"[file] report.pdf (many bytes, application/pdf)", "[file] report.pdf (many bytes, application/pdf)"},
		{"hello (3 bytes, x)", "hello (3 bytes, x)"},
		{"", ""},
	} {
		if got := string(Stored([]byte(tc.in))); got != tc.want {
			t.Errorf("Stored(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
