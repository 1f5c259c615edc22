// Package transfer is the strip of file transfers in flight in a pane: one
// line per upload or download, with its progress bar (bubbles' progress).
// The engine reports a transfer's bytes from the goroutine that runs it
// (engine.Progress); a Counter keeps the newest report, and the pane reads
// the counters on its tick (Sync), so that a fast transfer costs one
// redraw per tick, never one per chunk, and nothing blocks the engine.
// It imports neither the store nor the transport.
package transfer

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/charmbracelet/bubbles/progress"
	"github.com/muesli/termenv"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
)

// MaxLines is the most lines the strip takes; further transfers are
// counted on the last line.
const MaxLines = engine.MaxConcurrentTransfers

// Counter holds the newest progress a transfer reported. Report is safe
// to call from any goroutine.
type Counter struct{ done, total atomic.Int64 }

// Report is an engine.Progress.
func (c *Counter) Report(done, total int64) {
	c.total.Store(total)
	c.done.Store(done)
}

// Read returns the newest report.
func (c *Counter) Read() (done, total int64) { return c.done.Load(), c.total.Load() }

type item struct {
	key         int
	up          bool
	name, other string
	c           *Counter
	done, total int64
}

// Model is the strip. A pane holds it by pointer: copies of the pane
// share it.
type Model struct {
	th    themes.Theme
	items []item
	next  int
	bar   progress.Model
	// stopped are uploads begun and not finished (a run killed during
	// one): a line each after those in flight, with the key that resumes
	// them.
	stopped []Stopped
}

// Stopped is an upload begun and not finished, as the strip shows it.
type Stopped struct {
	Name, Other string // the file's name, and the peer or group it goes to
	Size        int64
}

// SetStopped replaces the uploads shown as interrupted.
func (m *Model) SetStopped(s []Stopped) { m.stopped = s }

// New returns an empty strip.
func New(th themes.Theme) *Model {
	bar := progress.New(progress.WithSolidFill(""), progress.WithColorProfile(termenv.Ascii),
		progress.WithoutPercentage(), progress.WithFillCharacters('█', '░'))
	return &Model{th: th, bar: bar}
}

// Start adds a transfer of the file name to or from other (up: an
// upload) and returns its key and the progress callback to hand to the
// engine.
func (m *Model) Start(up bool, name, other string) (int, engine.Progress) {
	m.next++
	c := &Counter{}
	m.items = append(m.items, item{key: m.next, up: up, name: name, other: other, c: c})
	return m.next, c.Report
}

// Finish removes the transfer key (done or failed).
func (m *Model) Finish(key int) {
	for i, it := range m.items {
		if it.key == key {
			m.items = append(m.items[:i:i], m.items[i+1:]...)
			return
		}
	}
}

// Len is how many transfers are in flight.
func (m *Model) Len() int { return len(m.items) }

// Lines is how many lines the strip takes.
func (m *Model) Lines() int { return min(len(m.items)+len(m.stopped), MaxLines) }

// Sync reads every transfer's newest report; it says whether any moved.
func (m *Model) Sync() bool {
	moved := false
	for i := range m.items {
		d, t := m.items[i].c.Read()
		if d != m.items[i].done || t != m.items[i].total {
			m.items[i].done, m.items[i].total = d, t
			moved = true
		}
	}
	return moved
}

// Percent is transfer key's share done (0 to 1) as last synced; false when
// it is not in flight.
func (m *Model) Percent(key int) (float64, bool) {
	for _, it := range m.items {
		if it.key == key {
			if it.total <= 0 {
				return 0, true
			}
			return float64(it.done) / float64(it.total), true
		}
	}
	return 0, false
}

// View draws the strip w cells wide, one line per transfer, in at most h
// lines.
func (m *Model) View(w, h int) string {
	n := min(m.Lines(), h)
	if n == 0 || w <= 0 {
		return ""
	}
	lines := make([]string, 0, n)
	all := len(m.items) + len(m.stopped)
	for i := range n {
		if i == n-1 && all > n {
			lines = append(lines, m.th.Panel.Count.Render(layout.Line(fmt.Sprintf(" … and %d more transfers", all-n+1), w)))
			break
		}
		if i < len(m.items) {
			lines = append(lines, m.line(m.items[i], w))
			continue
		}
		st := m.stopped[i-len(m.items)]
		lines = append(lines, m.th.Timeline.NotSent.Render(layout.Line(fmt.Sprintf(" ↑ %s → %s · interrupted (%s) · ctrl+r on %s resumes",
			layout.OneLine([]byte(st.Name), 32), st.Other, layout.Size(st.Size), st.Other), w)))
	}
	return strings.Join(lines, "\n")
}

func (m *Model) line(it item, w int) string {
	arrow, dir := "↑", "→"
	if !it.up {
		arrow, dir = "↓", "←"
	}
	label := fmt.Sprintf(" %s %s %s %s ", arrow, layout.OneLine([]byte(it.name), 32), dir, it.other)
	var figures string
	switch {
	case it.total <= 0:
		figures = " waiting for a transfer slot"
	default:
		figures = fmt.Sprintf(" %3d%% %s / %s", it.done*100/it.total, layout.Size(it.done), layout.Size(it.total))
	}
	barW := w - layout.Width(label) - layout.Width(figures)
	if barW < 8 {
		return m.th.Panel.Count.Render(layout.Line(label+figures, w))
	}
	bar := ""
	if it.total > 0 {
		b := m.bar
		b.Width = barW
		bar = m.th.Timeline.Accepted.Render(b.ViewAs(float64(it.done) / float64(it.total)))
	} else {
		bar = strings.Repeat(" ", barW)
	}
	return layout.Line(m.th.Panel.Count.Render(label)+bar+m.th.Panel.Count.Render(figures), w)
}
