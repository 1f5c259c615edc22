package cli

import (
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

// column returns where the text after a two-column line's name starts: the
// first non-space after at least two spaces following the name, or -1 when
// the name runs into the text (fewer than two spaces).
func column(line string) int {
	trimmed := strings.TrimLeft(line, " ")
	name := strings.IndexByte(trimmed, ' ')
	if name < 0 {
		return -1
	}
	start := len(line) - len(trimmed) + name
	rest := line[start:]
	text := len(rest) - len(strings.TrimLeft(rest, " "))
	if text < 2 {
		return -1
	}
	return start + text
}

// checkColumns fails when the lines' second column does not start at one
// place, at least two spaces after the longest name.
func checkColumns(t *testing.T, what string, lines []string) {
	t.Helper()
	want := -2
	for _, l := range lines {
		c := column(l)
		if c < 0 {
			t.Errorf("%s: %q runs its name into its text", what, l)
			continue
		}
		if want == -2 {
			want = c
		}
		if c != want {
			t.Errorf("%s: %q starts its text at column %d, the first line at %d", what, l, c, want)
		}
	}
}

// TestHelpColumns: "parley help" and every command's --help put the text
// in one column after the longest name (request-settings and relay-settings
// among the commands, --blob-address-bytes among the relay's flags), and
// the commands that print no records (tui, demo, relay) offer no --json.
func TestHelpColumns(t *testing.T) {
	env, stdout, _ := scriptedEnv()
	if code := run(context.Background(), env, []string{"help"}); code != exitOK {
		t.Fatalf("help: exit %d", code)
	}
	_, list, _ := strings.Cut(stdout.String(), "commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	checkColumns(t, "parley help", strings.Split(list, "\n"))
	if !strings.Contains(list, "request-settings  ") {
		t.Errorf("parley help lists no request-settings with its text apart: %q", list)
	}

	for _, c := range commandTable {
		env, stdout, _ := scriptedEnv()
		if code := run(context.Background(), env, []string{c.name, "--help"}); code != exitOK {
			t.Fatalf("%s --help: exit %d", c.name, code)
		}
		_, flags, ok := strings.Cut(stdout.String(), "flags:\n")
		if !ok {
			t.Fatalf("%s --help lists no flags: %q", c.name, stdout)
		}
		lines := strings.Split(strings.TrimRight(flags, "\n"), "\n")
		checkColumns(t, c.name+" --help", lines)
		hasJSON := strings.Contains(flags, "  --json ")
		if hasJSON == c.noJSON {
			t.Errorf("%s --help lists --json: %v, want %v (it prints records: %v)", c.name, hasJSON, !c.noJSON, !c.noJSON)
		}
	}
}

// TestDescribeBuild: the version line names what was run: the stamped
// version, a release's module version, the commit and its time the go
// command recorded, or says that nothing was stamped.
func TestDescribeBuild(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "15baf7c0123456789abcdef0123456789abcdef0"},
		{Key: "vcs.time", Value: "2026-12-05T18:50:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name, stamped string
		bi            *debug.BuildInfo
		want          string
	}{
		{"stamped", "v1.4.0-3-g15baf7c", vcs, "parley v1.4.0-3-g15baf7c go1.26.8"},
		{"release", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}}, "parley v1.4.0 go1.26.8"},
		{"commit", "", vcs, "parley devel 15baf7c01234+modified 2026-12-05T18:50:00Z go1.26.8"},
		{"nothing", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "parley (devel, no version stamped: build with make build) go1.26.8"},
		{"no build info", "", nil, "parley (devel, no version stamped: build with make build)"},
	} {
		if got := describeBuild(tc.stamped, tc.bi); got != tc.want {
			t.Errorf("%s: describeBuild = %q, want %q", tc.name, got, tc.want)
		}
	}
}
