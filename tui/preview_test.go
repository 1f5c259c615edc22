package tui

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestPreviewKitty: a saved picture drawn for the kitty graphics protocol
// carries the image in its first row and is measured as the cells it
// covers, within the preview's bounds; a file that is not a picture by its
// bytes draws nothing, whatever its name.
func TestPreviewKitty(t *testing.T) {
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 300, 90))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	img.SetRGBA(0, 0, color.RGBA{R: 255, A: 255})
	path := filepath.Join(dir, "cat.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rows := preview(path, true)
	if len(rows) == 0 || len(rows) > previewRows {
		t.Fatalf("%d rows, want 1..%d", len(rows), previewRows)
	}
	if !strings.HasPrefix(rows[0], "\x1b_G") {
		t.Fatalf("first row does not send the image: %q", rows[0][:min(len(rows[0]), 40)])
	}
	for i, r := range rows {
		if w := ansi.StringWidth(r); w == 0 || w > previewCols {
			t.Fatalf("row %d is %d cells wide", i, w)
		}
	}
	fake := filepath.Join(dir, "fake.png")
	if err := os.WriteFile(fake, []byte("not a picture at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := preview(fake, true); got != nil {
		t.Fatalf("a file that is not a picture drew %d rows", len(got))
	}
}
