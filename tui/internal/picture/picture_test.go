package picture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

func encode(t *testing.T, kind string, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	switch kind {
	case "png":
		err = png.Encode(&b, img)
	case "jpeg":
		err = jpeg.Encode(&b, img, nil)
	case "gif":
		err = gif.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checker is a w x h image of red and blue squares.
func checker(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{R: 255, A: 255}
			if (x/4+y/4)%2 == 1 {
				c = color.RGBA{B: 255, A: 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

// TestDecodeEachKind: PNG, JPEG and GIF decode to their size.
func TestDecodeEachKind(t *testing.T) {
	for _, kind := range []string{"png", "jpeg", "gif"} {
		img, err := Decode(encode(t, kind, checker(32, 16)))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if b := img.Bounds(); b.Dx() != 32 || b.Dy() != 16 {
			t.Fatalf("%s: decoded %v", kind, b)
		}
	}
}

// claiming is a small PNG whose header claims w x h pixels: a 1 x 1 image
// with its IHDR's size and checksum rewritten, as a bomb's would read.
func claiming(t *testing.T, w, h uint32) []byte {
	t.Helper()
	b := encode(t, "png", image.NewGray(image.Rect(0, 0, 1, 1)))
	if string(b[12:16]) != "IHDR" {
		t.Fatalf("no IHDR at 12: %q", b[12:16])
	}
	binary.BigEndian.PutUint32(b[16:], w)
	binary.BigEndian.PutUint32(b[20:], h)
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

// TestDecompressionBomb: a PNG whose header claims 20000 x 20000 pixels
// (400 million, 1.6 GB decoded) is refused from its header, before a pixel
// is decoded.
func TestDecompressionBomb(t *testing.T) {
	bomb := claiming(t, 20000, 20000)
	_, err := Decode(bomb)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "20000x20000") {
		t.Fatalf("Decode(bomb) = %v, want ErrTooLarge naming its size", err)
	}
	// Within each side but past the pixel count.
	wide := claiming(t, 8000, 4000)
	if _, err := Decode(wide); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decode(8000x4000) = %v, want ErrTooLarge", err)
	}
}

// TestNotAnImage: text named like a picture, a truncated PNG and an empty
// file are refused with ErrNotImage, and nothing panics.
func TestNotAnImage(t *testing.T) {
	good := encode(t, "png", checker(8, 8))
	for name, b := range map[string][]byte{
		"text":      []byte("<svg onload=alert(1)>"),
		"truncated": good[:len(good)/2],
		"empty":     nil,
		"header":    good[:8],
	} {
		if _, err := Decode(b); !errors.Is(err, ErrNotImage) {
			t.Fatalf("%s: Decode = %v, want ErrNotImage", name, err)
		}
	}
}

// TestLoadRefusesALargeFile: a file past MaxFileBytes is refused from its
// size, unread.
func TestLoadRefusesALargeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Load(path); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Load = %v, want ErrTooLarge", err)
	}
}

// TestHalfBlocks: the preview fits the cells asked for, keeps the
// proportions, draws each cell as an upper half block in colour, and is
// nothing on a terminal without colour.
func TestHalfBlocks(t *testing.T) {
	defer lipgloss.SetColorProfile(lipgloss.ColorProfile())
	lipgloss.SetColorProfile(termenv.TrueColor)
	img := checker(64, 32)
	lines := HalfBlocks(img, 40, 10)
	if w, h := Fit(img, 40, 10); w != 40 || h != 10 || len(lines) != 10 {
		t.Fatalf("Fit = %dx%d, %d lines; want 40x10", w, h, len(lines))
	}
	for _, l := range lines {
		if strings.Count(l, "▀") != 40 || !strings.Contains(l, "\x1b[") {
			t.Fatalf("line %q: want 40 coloured half blocks", l)
		}
	}
	if w, h := Fit(checker(10, 100), 40, 10); w != 2 || h != 10 {
		t.Fatalf("a tall image fits in %dx%d, want 2x10", w, h)
	}
	lipgloss.SetColorProfile(termenv.Ascii)
	if got := HalfBlocks(img, 40, 10); got != nil {
		t.Fatalf("without colour: %d lines, want none", len(got))
	}
}

// FuzzDecode: any bytes decode or fail with a typed error, never panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte("GIF89a"))
	f.Add([]byte{0xff, 0xd8, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		img, err := Decode(b)
		if err != nil && !errors.Is(err, ErrNotImage) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && img == nil {
			t.Fatal("nil image without an error")
		}
	})
}
