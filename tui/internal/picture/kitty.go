package picture

import (
	"bytes"
	"fmt"
	"image"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/charmbracelet/x/ansi/kitty"
	"golang.org/x/image/draw"
)

// Mode is how a picture is drawn.
type Mode string

// The drawing modes.
const (
	// ModeAuto (the zero value) draws with the kitty graphics protocol on
	// a terminal known to show its placeholders (kitty, Ghostty) and in
	// half blocks elsewhere, tmux included: tmux passes neither the
	// image nor its placeholders through unless told to.
	ModeAuto Mode = ""
	// ModeKitty always uses the kitty graphics protocol.
	ModeKitty Mode = "kitty"
	// ModeBlocks always draws half blocks.
	ModeBlocks Mode = "blocks"
)

// ParseMode reads a drawing mode: "auto" (or ""), "kitty" or "blocks".
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeAuto, "auto":
		return ModeAuto, nil
	case ModeKitty, ModeBlocks:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown graphics mode %q (auto, kitty or blocks)", s)
}

// Kitty reports whether mode draws with the kitty graphics protocol,
// asking the environment (getenv) for ModeAuto.
func (mode Mode) Kitty(getenv func(string) string) bool {
	switch mode {
	case ModeKitty:
		return true
	case ModeBlocks:
		return false
	}
	if getenv("TMUX") != "" {
		return false
	}
	return getenv("KITTY_WINDOW_ID") != "" || getenv("TERM") == "xterm-kitty" ||
		getenv("TERM_PROGRAM") == "ghostty" || strings.HasSuffix(getenv("TERM"), "ghostty")
}

// pixelsPerCell is the resolution an image is sent at, per cell: the
// terminal scales it to the cells it is placed in, and a cell is seldom
// more than about 10x20 pixels. Sending more would only cost bytes.
const (
	pixelsPerCellX = 10
	pixelsPerCellY = 20
)

// nextID numbers the images this process sends. It starts at a random
// point so that two parley processes in one terminal are unlikely to
// replace each other's pictures, and stays within 24 bits: the id is
// carried in a placeholder cell's foreground colour.
var nextID atomic.Uint32

func init() { nextID.Store(rand.Uint32N(1 << 23)) }

// imageID returns a fresh image id in [1, 2^24).
func imageID() uint32 {
	for {
		id := nextID.Add(1) & (1<<24 - 1)
		if id != 0 {
			return id
		}
	}
}

// KittyCells draws img in at most cols x rows cells with the kitty
// graphics protocol's Unicode placeholders: the image is sent once,
// scaled down and encoded as PNG, in a sequence at the start of the first
// row, as a virtual placement of the cells it covers; every row is then
// ordinary text (one placeholder character a cell, its row and column
// in combining marks, the image id in the foreground colour), which the
// interface's line-based renderer measures, clips and moves like any
// other text. nil when img has no pixels.
func KittyCells(img image.Image, cols, rows int) []string {
	w, h := Fit(img, cols, rows)
	if w == 0 {
		return nil
	}
	b := img.Bounds()
	// Scaled down (never up) by one factor, so that the proportions
	// Fit kept hold in the pixels sent too.
	pw, ph := b.Dx(), b.Dy()
	if pw > w*pixelsPerCellX || ph > h*pixelsPerCellY {
		if pw*h*pixelsPerCellY > ph*w*pixelsPerCellX {
			pw, ph = w*pixelsPerCellX, ph*w*pixelsPerCellX/pw
		} else {
			pw, ph = pw*h*pixelsPerCellY/ph, h*pixelsPerCellY
		}
	}
	dst := image.NewRGBA(image.Rect(0, 0, max(pw, 1), max(ph, 1)))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)

	id := imageID()
	var send bytes.Buffer
	err := kitty.EncodeGraphics(&send, dst, &kitty.Options{
		Action:           kitty.TransmitAndPut,
		Quite:            2, // no reply: it would arrive as input
		ID:               int(id),
		Format:           kitty.PNG,
		Transmission:     kitty.Direct,
		Chunk:            true,
		VirtualPlacement: true,
		Columns:          w,
		Rows:             h,
	})
	if err != nil {
		return nil
	}
	colour := fmt.Sprintf("\x1b[38;2;%d;%d;%dm", id>>16&0xff, id>>8&0xff, id&0xff)
	out := make([]string, h)
	var sb strings.Builder
	for y := range h {
		sb.Reset()
		if y == 0 {
			sb.Write(send.Bytes())
		}
		sb.WriteString(colour)
		for x := range w {
			sb.WriteRune(kitty.Placeholder)
			sb.WriteRune(kitty.Diacritic(y))
			sb.WriteRune(kitty.Diacritic(x))
		}
		sb.WriteString("\x1b[39m")
		out[y] = sb.String()
	}
	return out
}
