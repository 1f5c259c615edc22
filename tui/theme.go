package tui

import (
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/parley-chat/parley/themes"
)

// Theme returns the theme opts names. With none named (neither --theme nor
// the settings file), it is the one that reads on the terminal's
// background: light on a light background, dark elsewhere, as the terminal
// answers lipgloss's question (OSC 11, then COLORFGBG; a terminal that does
// not answer is taken as dark).
func Theme(opts Options) (themes.Theme, error) {
	name := opts.Theme
	if name == "" {
		name = themes.ForBackground(hasDarkBackground(opts.Output))
	}
	return themes.Get(name)
}

// hasDarkBackground asks the terminal behind out (stdout when nil) for its
// background. termenv does not ask inside tmux or screen, which may serve
// several terminals; tmux (3.3 and later) answers for the pane itself, and
// one that does not answers the cursor report sent with the question, so
// the question is asked there too.
func hasDarkBackground(out io.Writer) bool {
	if out == nil {
		out = os.Stdout
	}
	return lipgloss.NewRenderer(out, termenv.WithEnvironment(askingEnv{})).HasDarkBackground()
}

// askingEnv is the environment, with a TERM of tmux or screen read as the
// terminal they emulate.
type askingEnv struct{}

func (askingEnv) Environ() []string { return os.Environ() }

func (askingEnv) Getenv(k string) string {
	v := os.Getenv(k)
	if k == "TERM" && (strings.HasPrefix(v, "tmux") || strings.HasPrefix(v, "screen")) {
		return "xterm-256color"
	}
	return v
}
