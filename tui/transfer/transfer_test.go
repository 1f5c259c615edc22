package transfer

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/themes"
)

func TestStripFollowsReports(t *testing.T) {
	th, err := themes.Get("dark")
	if err != nil {
		t.Fatal(err)
	}
	m := New(th)
	k, report := m.Start(false, "big\x1b[31m.bin", "alice/1")
	if got := m.View(80, MaxLines); !strings.Contains(got, "waiting for a transfer slot") {
		t.Fatalf("before any report the strip shows %q, want the wait for a slot", got)
	}
	report(4<<20, 10<<20)
	if !m.Sync() {
		t.Fatal("Sync after a report says nothing moved")
	}
	if m.Sync() {
		t.Fatal("Sync with no new report says something moved")
	}
	if p, ok := m.Percent(k); !ok || p != 0.4 {
		t.Fatalf("Percent = %v, %v; want 0.4, true", p, ok)
	}
	got := ansi.Strip(m.View(80, MaxLines))
	for _, want := range []string{"↓ big[31m.bin ← alice/1", " 40% 4.0 MiB / 10.0 MiB", "█", "░"} {
		if !strings.Contains(got, want) {
			t.Errorf("strip %q lacks %q", got, want)
		}
	}
	if strings.Contains(m.View(80, MaxLines), "\x1b[31m") {
		t.Error("the file's name drives the terminal: its escape reached the screen")
	}
	if w := ansi.StringWidth(got); w != 80 {
		t.Errorf("strip is %d cells wide, want 80", w)
	}
	for i := 0; i < MaxLines+1; i++ {
		m.Start(true, "f", "bob/1")
	}
	if got, want := m.Lines(), MaxLines; got != want {
		t.Errorf("Lines = %d with %d transfers, want %d", got, m.Len(), want)
	}
	if got := m.View(80, MaxLines); !strings.Contains(got, "and 3 more transfers") {
		t.Errorf("the last line does not count the rest: %q", got)
	}
	m.Finish(k)
	if _, ok := m.Percent(k); ok {
		t.Error("a finished transfer is still in the strip")
	}
}
