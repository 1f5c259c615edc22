package layout

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		w, h  int
		want  string
	}{
		{"pads", []string{"ab"}, 4, 2, "ab  \n    "},
		{"cuts", []string{"abcdef"}, 4, 1, "abc…"},
		{"drops extra lines", []string{"a", "b", "c"}, 1, 2, "a\nb"},
		{"wide runes", []string{"日本語"}, 4, 1, "日… "},
		{"empty box", []string{"a"}, 0, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fit(tc.lines, tc.w, tc.h); got != tc.want {
				t.Fatalf("Fit(%q, %d, %d) = %q, want %q", tc.lines, tc.w, tc.h, got, tc.want)
			}
		})
	}
}

// TestFitStyled: styled lines are measured by their cells, not bytes.
func TestFitStyled(t *testing.T) {
	got := Fit([]string{"\x1b[1mbold\x1b[0m"}, 6, 1)
	if w := ansi.StringWidth(got); w != 6 {
		t.Fatalf("width %d, want 6 (%q)", w, got)
	}
}

// TestClean: a peer's body cannot carry terminal control sequences.
func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hi\x1b[2Jthere", "hi[2Jthere"},
		{"a\tb", "a b"},
		{"line\nnext", "line\nnext"},
		{"bell\x07 \u009b31m", "bell 31m"},
		{"raw \x9b byte", "raw � byte"},
		{"bad \xff utf8", "bad � utf8"},
		{"pay \u202eTXT.exe\u202c now", "pay TXT.exe now"},
		{"iso \u2067late\u2069 r", "iso late r"},
	} {
		if got := Clean([]byte(tc.in)); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := OneLine([]byte("a\nb\x1b"), 10); got != "a b" {
		t.Errorf("OneLine = %q, want %q", got, "a b")
	}
	if got := OneLine([]byte(strings.Repeat("x", 50)), 10); ansi.StringWidth(got) != 10 {
		t.Errorf("OneLine kept %d cells, want 10", ansi.StringWidth(got))
	}
}

func TestBeside(t *testing.T) {
	got := Beside("ab\ncd", "|\n|", "x")
	if want := "ab|x\ncd| "; got != want {
		t.Fatalf("Beside = %q, want %q", got, want)
	}
}
