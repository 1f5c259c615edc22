package picture

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/kitty"
	"github.com/parley-chat/parley/internal/layout"
)

// apcs splits the kitty graphics sequences off the front of a row: their
// option strings, their payloads joined, and the rest of the row.
func apcs(t *testing.T, row string) (opts []string, payload, rest string) {
	t.Helper()
	for strings.HasPrefix(row, "\x1b_G") {
		end := strings.Index(row, "\x1b\\")
		if end < 0 {
			t.Fatalf("unterminated graphics sequence in %q", row[:min(len(row), 80)])
		}
		body := row[3:end]
		o, p, _ := strings.Cut(body, ";")
		opts = append(opts, o)
		payload += p
		row = row[end+2:]
	}
	return opts, payload, row
}

// noise is a w x h image of pseudo-random colours: a PNG of it does not
// compress below a few chunks.
func noise(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	x := uint32(2463534242)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = byte(x)
	}
	return img
}

// TestKittyCells: the first row carries the image, sent once in chunks as
// a PNG at no more than the cells' resolution, as a quiet virtual
// placement of exactly the cells drawn; every row is then one placeholder
// a cell, with its row and column marks, in the id's colour.
func TestKittyCells(t *testing.T) {
	img := noise(600, 300)
	rows := KittyCells(img, 40, 12)
	w, h := Fit(img, 40, 12)
	if len(rows) != h {
		t.Fatalf("%d rows, want %d", len(rows), h)
	}
	opts, payload, first := apcs(t, rows[0])
	if len(opts) < 2 {
		t.Fatalf("image sent in %d sequence(s): a PNG of this size takes several chunks", len(opts))
	}
	var sent kitty.Options
	if err := sent.UnmarshalText([]byte(opts[0])); err != nil {
		t.Fatal(err)
	}
	if sent.Action != kitty.TransmitAndPut || !sent.VirtualPlacement || sent.Format != kitty.PNG ||
		sent.Quite != 2 || sent.Columns != w || sent.Rows != h || sent.ID <= 0 || sent.ID >= 1<<24 {
		t.Fatalf("first chunk options %q", opts[0])
	}
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	pic, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("payload is not a PNG: %v", err)
	}
	if b := pic.Bounds(); b.Dx() > w*pixelsPerCellX || b.Dy() > h*pixelsPerCellY || b.Dx() < w*pixelsPerCellX-1 {
		t.Fatalf("sent %v for %dx%d cells", b, w, h)
	}
	colour := fmt.Sprintf("\x1b[38;2;%d;%d;%dm", sent.ID>>16&0xff, sent.ID>>8&0xff, sent.ID&0xff)
	for y, row := range rows {
		if y == 0 {
			row = first
		} else if strings.Contains(row, "\x1b_G") {
			t.Fatalf("row %d sends the image again", y)
		}
		if !strings.HasPrefix(row, colour) {
			t.Fatalf("row %d does not start in the id's colour %q: %q", y, colour, row[:min(len(row), 40)])
		}
		if got := ansi.StringWidth(row); got != w {
			t.Fatalf("row %d is %d cells wide, want %d", y, got, w)
		}
		cells := []rune(ansi.Strip(row))
		if len(cells) != 3*w {
			t.Fatalf("row %d has %d runes, want %d", y, len(cells), 3*w)
		}
		for x := range w {
			c := cells[3*x : 3*x+3]
			if c[0] != kitty.Placeholder || c[1] != kitty.Diacritic(y) || c[2] != kitty.Diacritic(x) {
				t.Fatalf("cell %d,%d is %q", x, y, string(c))
			}
		}
	}
}

// TestKittyCellsSurviveTheFrame: what the interface does to a row before
// the terminal sees it (the emoji rewrite of the frame, clipping to the
// panel) keeps the image and its placeholders.
func TestKittyCellsSurviveTheFrame(t *testing.T) {
	rows := KittyCells(checker(64, 64), 20, 10)
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	frame := strings.Join(rows, "\n")
	if layout.Cells(frame) != frame {
		t.Fatal("the frame's emoji rewrite changed the placeholders")
	}
	first := rows[0]
	clipped := ansi.Truncate(first, 5, "")
	opts, _, rest := apcs(t, clipped)
	_, _, whole := apcs(t, first)
	if len(opts) == 0 || !strings.HasPrefix(first, clipped[:len(clipped)-len(rest)]) {
		t.Fatal("clipping the row dropped the image")
	}
	if ansi.StringWidth(rest) != 5 || ansi.StringWidth(whole) != ansi.StringWidth(first) {
		t.Fatalf("clipped to %d cells (row %d)", ansi.StringWidth(rest), ansi.StringWidth(whole))
	}
}

// TestKittyIDsDiffer: two pictures never share an id (one would replace
// the other on the screen).
func TestKittyIDsDiffer(t *testing.T) {
	seen := map[uint32]bool{}
	for range 1000 {
		id := imageID()
		if id == 0 || id >= 1<<24 || seen[id] {
			t.Fatalf("id %d repeated or out of range", id)
		}
		seen[id] = true
	}
}

// TestModeKitty: auto draws with kitty on kitty and Ghostty, never inside
// tmux; the explicit modes ignore the environment.
func TestModeKitty(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		mode Mode
		env  func(string) string
		want bool
	}{
		{ModeAuto, env("TERM", "xterm-kitty"), true},
		{ModeAuto, env("KITTY_WINDOW_ID", "1", "TERM", "xterm-256color"), true},
		{ModeAuto, env("TERM_PROGRAM", "ghostty"), true},
		{ModeAuto, env("TERM", "xterm-ghostty"), true},
		{ModeAuto, env("TERM", "xterm-kitty", "TMUX", "/tmp/tmux-0/default,1,0"), false},
		{ModeAuto, env("TERM", "xterm-256color"), false},
		{ModeBlocks, env("TERM", "xterm-kitty"), false},
		{ModeKitty, env("TERM", "screen", "TMUX", "x"), true},
	}
	for i, c := range cases {
		if got := c.mode.Kitty(c.env); got != c.want {
			t.Errorf("case %d (%q): %v, want %v", i, c.mode, got, c.want)
		}
	}
	for _, s := range []string{"", "auto", "kitty", "blocks"} {
		if _, err := ParseMode(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseMode("sixel"); err == nil {
		t.Error("an unknown mode was accepted")
	}
}
