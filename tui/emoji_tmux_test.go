package tui

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/internal/layout"
)

// plainSamples are clusters terminals disagree on, each with what its
// plain form must not show (the first code point of a joined sequence).
var plainSamples = []struct{ cluster, never string }{
	{"👍🏽", ""},
	{"👨\u200d👩\u200d👧", "👨"},
	{"👩🏽\u200d💻", "👩"},
	{"🏳️\u200d🌈", "🏳"},
	{"❤️", ""},
	{"1️⃣", ""},
}

// TestPlainClustersInTmux: in a real terminal that measures code point by
// code point (tmux), each cluster's plain form takes exactly the cells the
// layout gave it, and none is drawn as another emoji. The helper prints
// each plain form, a bar after it, then jumps to column 20 and prints a
// hash: the spaces tmux leaves between the two say how wide it drew the
// cluster.
func TestPlainClustersInTmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("no tmux")
	}
	name := fmt.Sprintf("parley-emoji-%d", os.Getpid())
	run := func(args ...string) string {
		out, err := exec.Command(tmux, append([]string{"-L", name, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	run("new-session", "-d", "-x", "60", "-y", "20")
	t.Cleanup(func() { _ = exec.Command(tmux, "-L", name, "kill-server").Run() })
	run("set-option", "-g", "remain-on-exit", "on")
	run("respawn-pane", "-k", "env", "PARLEY_EMOJI_HELPER=1", os.Args[0], "-test.run=^TestPlainClustersHelper$")
	var screen string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if screen = run("capture-pane", "-p"); strings.Contains(screen, "done") {
			break
		}
	}
	for i, s := range plainSamples {
		prefix := fmt.Sprintf("L%d:", i)
		var line string
		for _, l := range strings.Split(screen, "\n") {
			if strings.HasPrefix(l, prefix) {
				line = l
			}
		}
		bar, hash := strings.Index(line, "|"), strings.Index(line, "#")
		if line == "" || bar < 0 || hash < bar {
			t.Fatalf("%q: no line %s on the screen:\n%s", s.cluster, prefix, screen)
		}
		drawn := line[len(prefix):bar]
		want := ansi.StringWidth(layout.Cells(s.cluster))
		if got := 20 - 1 - len(prefix) - (hash - bar - 1); got != want {
			t.Errorf("%q drawn as %q takes %d cells in tmux, the layout gave it %d", s.cluster, drawn, got, want)
		}
		if s.never != "" && strings.Contains(drawn, s.never) {
			t.Errorf("%q is drawn as another emoji: %q", s.cluster, drawn)
		}
	}
}

// TestPlainClustersHelper is what TestPlainClustersInTmux runs in its
// terminal.
func TestPlainClustersHelper(t *testing.T) {
	if os.Getenv("PARLEY_EMOJI_HELPER") == "" {
		t.Skip("run in a terminal by TestPlainClustersInTmux")
	}
	fmt.Print("\n\n")
	for i, s := range plainSamples {
		fmt.Printf("L%d:%s|\x1b[21G#\n", i, layout.Cells(s.cluster))
	}
	fmt.Println("done")
}
