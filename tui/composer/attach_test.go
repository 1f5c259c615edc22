package composer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAttachLine(t *testing.T) {
	src := &sender{}
	m := newComposer(src)
	m = typeText(m, "/file  ~/report.pdf ")
	m, cmd := m.Update(enter)
	if cmd == nil {
		t.Fatal("enter on a /file line did nothing")
	}
	got, ok := cmd().(AttachMsg)
	if !ok || got.Path != "~/report.pdf" || got.Peer != bob || got.Group != nil {
		t.Fatalf("enter on /file asked %#v, want the attach of ~/report.pdf to bob/1", got)
	}
	if len(src.sent) != 0 || m.Value() != "" {
		t.Fatalf("the /file line was sent as text (%q) or kept (%q)", src.sent, m.Value())
	}
	// No path: the usage, nothing asked.
	m = typeText(m, "/file ")
	m, cmd = m.Update(enter)
	if cmd != nil || !strings.Contains(m.View(), "/file PATH") {
		t.Fatalf("a /file line without a path: cmd %v, view\n%s", cmd != nil, m.View())
	}
	// Text that only mentions /file is text.
	m = typeText(m, "see /file docs")
	_, cmd = m.Update(enter)
	if _, ok := cmd().(SentMsg); !ok || len(src.sent) != 1 {
		t.Fatalf("text mentioning /file was not sent as text: %q", src.sent)
	}
	if home, err := os.UserHomeDir(); err == nil {
		if got, want := ExpandPath("~/a/b"), filepath.Join(home, "a/b"); got != want {
			t.Errorf("ExpandPath(~/a/b) = %q, want %q", got, want)
		}
	}
}

func TestCompletePath(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"report-2026.pdf", "report-2025.pdf", "photo.png", ".hidden"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "photos"), 0o700); err != nil {
		t.Fatal(err)
	}
	m := newComposer(&sender{})
	if _, ok := (typeText(m, "hello")).Complete(); ok {
		t.Fatal("tab on text completes something")
	}
	for _, c := range []struct {
		typed, want string
		choices     int
	}{
		{"rep", "report-202", 2},
		{"report-2026", "report-2026.pdf", 0},
		{"photos", "photos/", 0},
		{"pho", "photo", 2},
		{"zzz", "zzz", 0},
		{"", "", 4}, // hidden files only when asked for
	} {
		m := typeText(m, AttachPrefix+dir+"/"+c.typed)
		cmd, ok := m.Complete()
		if !ok {
			t.Fatalf("%q: no completion", c.typed)
		}
		m, _ = m.Update(cmd())
		if got, want := m.Value(), AttachPrefix+dir+"/"+c.want; got != want {
			t.Errorf("%q completes to %q, want %q", c.typed, got, want)
		}
		if got := m.note; (c.choices > 0) != (got != "") || c.choices > 0 && strings.Count(got, "  ")+1 != c.choices {
			t.Errorf("%q: choices %q, want %d", c.typed, got, c.choices)
		}
	}
	// A completion that comes back after the text changed is dropped.
	m = typeText(m, AttachPrefix+dir+"/rep")
	cmd, _ := m.Complete()
	msg := cmd()
	m = typeText(m, "something else")
	m, _ = m.Update(msg)
	if m.Value() != "something else" {
		t.Fatalf("a late completion replaced the text: %q", m.Value())
	}
}
