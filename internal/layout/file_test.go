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
