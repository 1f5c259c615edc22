// Package picture turns a received image file into a preview the
// terminal can draw: it decodes PNG, JPEG and GIF (the first frame) within
// bounds checked before any pixel is decoded, and draws the image either
// in half-block cells (the upper half the cell's foreground, the lower half
// its background), which every colour terminal shows, or as the kitty
// graphics protocol's Unicode placeholders, which kitty and Ghostty replace
// by the image itself. Both are rows of text that the interface's
// line-based renderer places, clips and redraws like any other line.
//
// It decodes only what the caller hands it: the interface calls it on a
// file the engine saved after its digest verified, never on bytes that did
// not.
package picture

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif"  // registers the GIF decoder
	_ "image/jpeg" // registers the JPEG decoder
	_ "image/png"  // registers the PNG decoder
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/image/draw"
)

// Bounds on what is decoded. A compressed image can claim dimensions that
// would take gigabytes once decoded (a decompression bomb): the header is
// read first and the image refused unless both its sides and its pixel
// count are within these, whatever the file's size.
const (
	// MaxFileBytes is the largest file previewed: 32 MiB.
	MaxFileBytes = 32 << 20
	// MaxSide is the longest side previewed, in pixels.
	MaxSide = 8192
	// MaxPixels is the most pixels previewed (about 100 MiB of RGBA).
	MaxPixels = 24_000_000
)

// Errors Load returns.
var (
	// ErrNotImage: the bytes are not a PNG, JPEG or GIF, whatever the
	// file's name or announced type says.
	ErrNotImage = errors.New("not a PNG, JPEG or GIF image")
	// ErrTooLarge: the file or the image it announces exceeds the bounds.
	ErrTooLarge = errors.New("image too large to preview")
)

// Kind returns the media type the bytes' first 512 bytes show (PNG, JPEG
// or GIF), and false for anything else: the type the sender announced is
// not trusted.
func Kind(head []byte) (string, bool) {
	switch t := http.DetectContentType(head); t {
	case "image/png", "image/jpeg", "image/gif":
		return t, true
	}
	return "", false
}

// Load decodes the image file at path within the bounds.
func Load(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, fi.Size(), MaxFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// Decode decodes b within the bounds.
func Decode(b []byte) (image.Image, error) {
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(b), MaxFileBytes)
	}
	if _, ok := Kind(b[:min(len(b), 512)]); !ok {
		return nil, ErrNotImage
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotImage, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > MaxSide || cfg.Height > MaxSide || cfg.Width*cfg.Height > MaxPixels {
		return nil, fmt.Errorf("%w: %dx%d pixels, at most %d a side and %d in all", ErrTooLarge, cfg.Width, cfg.Height, MaxSide, MaxPixels)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotImage, err)
	}
	return img, nil
}

// Fit returns the size in cells, at most cols wide and rows high, that
// keeps img's proportions (a cell is about twice as tall as wide, and holds
// two pixels one above the other).
func Fit(img image.Image, cols, rows int) (w, h int) {
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 || cols <= 0 || rows <= 0 {
		return 0, 0
	}
	w = cols
	h = (b.Dy()*w/b.Dx() + 1) / 2
	if h > rows {
		h = rows
		w = max(1, b.Dx()*2*h/b.Dy())
	}
	return w, max(1, h)
}

// HalfBlocks draws img in at most cols x rows cells, one string per row,
// each cell an upper half block whose foreground is the upper pixel and
// whose background the lower one. Colours are written as lipgloss renders
// them: degraded to what the terminal shows, and none at all on a
// terminal without colour (then there is no picture to draw: nil).
func HalfBlocks(img image.Image, cols, rows int) []string {
	if lipgloss.ColorProfile() == termenv.Ascii {
		return nil
	}
	w, h := Fit(img, cols, rows)
	if w == 0 {
		return nil
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, 2*h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	out := make([]string, h)
	var sb strings.Builder
	for y := range h {
		sb.Reset()
		for x := range w {
			top, bottom := hex(dst.RGBAAt(x, 2*y)), hex(dst.RGBAAt(x, 2*y+1))
			sb.WriteString(lipgloss.NewStyle().Foreground(lipgloss.Color(top)).Background(lipgloss.Color(bottom)).Render("▀"))
		}
		out[y] = sb.String()
	}
	return out
}

// hex is c as lipgloss spells a colour, with transparency over black.
func hex(c color.RGBA) string {
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}
