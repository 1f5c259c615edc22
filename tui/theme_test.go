package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestThemeFollowsBackground: in a real terminal (tmux, whose panes answer
// the background question) the theme nobody named is the light one on a
// white background and the dark one on black; a named theme wins.
func TestThemeFollowsBackground(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("no tmux")
	}
	for _, tc := range []struct{ bg, want string }{{"white", "theme light"}, {"black", "theme dark"}} {
		t.Run(tc.bg, func(t *testing.T) {
			name := fmt.Sprintf("parley-theme-%d-%s", os.Getpid(), tc.bg)
			run := func(args ...string) string {
				out, err := exec.Command(tmux, append([]string{"-L", name, "-f", "/dev/null"}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("tmux %v: %v: %s", args, err, out)
				}
				return string(out)
			}
			run("new-session", "-d", "-x", "60", "-y", "12")
			t.Cleanup(func() { _ = exec.Command(tmux, "-L", name, "kill-server").Run() })
			run("set-option", "-g", "remain-on-exit", "on")
			run("set-option", "-g", "window-style", "bg="+tc.bg)
			// The helper asks on the pane's terminal and writes its answer
			// to a file (tmux may scroll a pane's first line away).
			out := filepath.Join(t.TempDir(), "theme")
			run("respawn-pane", "-k", "env", "-u", "CI", "-u", "COLORFGBG", "PARLEY_THEME_HELPER="+out, os.Args[0], "-test.run=^TestThemeHelper$")
			var got []byte
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if got, _ = os.ReadFile(out); strings.Contains(string(got), "named") {
					break
				}
			}
			if !strings.Contains(string(got), tc.want) || !strings.Contains(string(got), "named high-contrast") {
				t.Fatalf("on a %s background the helper says %q, want %q and the named theme; the pane:\n%s", tc.bg, got, tc.want, run("capture-pane", "-p"))
			}
		})
	}
}

// TestThemeHelper is what TestThemeFollowsBackground runs in its terminal.
func TestThemeHelper(t *testing.T) {
	out := os.Getenv("PARLEY_THEME_HELPER")
	if out == "" {
		t.Skip("run in a terminal by TestThemeFollowsBackground")
	}
	th, err := Theme(Options{})
	named, err2 := Theme(Options{Theme: "high-contrast"})
	if err := os.WriteFile(out, fmt.Appendf(nil, "theme %s (%v)\nnamed %s (%v)\n", th.Name, err, named.Name, err2), 0o600); err != nil {
		t.Fatal(err)
	}
}
