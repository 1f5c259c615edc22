// Package cli is parley's command line: the command table (commands.go),
// one file per group of commands (cmd_*.go), flag parsing and the
// passphrase prompt (cli.go), and the exit codes of the contract (run.go).
// A command parses its flags, opens the profile (package profile), calls one
// engine method and prints; the protocol's ordering lives below it. Main is
// what the parley binary runs; run, which Main calls, returns the exit code
// and writes through an environment, so the commands are tested in process.
// cli imports the chat (tui, tui/demo) only to start it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/parley-chat/parley/wire"
)

// Exit codes of the command-line contract.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitPending = 3 // a message stays pending (MessageNotSent)
	exitLocked  = 4 // the profile is open in another process
)

// cliEnv is what a command runs with; tests substitute the streams.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// readSecret reads one line from the terminal without echoing it; nil
	// when stdin is not a terminal, and then no command prompts.
	readSecret func() ([]byte, error)
	// stderrTerminal is set when stderr is a terminal: long commands
	// (backup, restore) draw their progress there.
	stderrTerminal bool

	// profileDir and relayURL are the profile the command named and its
	// relay, once it resolved them: explain names them in an error.
	profileDir, relayURL string
}

// Main runs the command line args (without the program's name) with the
// process's standard streams and environment, and returns the exit code;
// ctx ends a long-running command (relay, tui, demo, sync --wait).
func Main(ctx context.Context, args []string) int {
	env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, stderrTerminal: term.IsTerminal(int(os.Stderr.Fd()))}
	if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
		env.readSecret = func() ([]byte, error) { return term.ReadPassword(fd) }
	}
	return run(ctx, env, args)
}

// run executes one command line and returns its exit code. Messages to the
// user go to stderr, one line naming the cause.
func run(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-V" || args[0] == "version" {
		fmt.Fprintln(env.stdout, versionLine())
		return exitOK
	}
	cmd := findCommand(args[0])
	if cmd == nil {
		if near := nearestCommand(args[0]); near != "" {
			fmt.Fprintf(env.stderr, "parley: unknown command %q: did you mean %s? (run \"parley help\")\n", args[0], near)
		} else {
			fmt.Fprintf(env.stderr, "parley: unknown command %q (run \"parley help\")\n", args[0])
		}
		return exitUsage
	}
	err := cmd.run(ctx, env, cmd, args[1:])
	if err == nil {
		return exitOK
	}
	var ue *usageError
	switch {
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(env.stderr, "parley %s: %s\nusage: parley %s %s\n", cmd.name, textLine(ue.msg), cmd.name, cmd.args)
		return exitUsage
	}
	fmt.Fprintf(env.stderr, "parley %s: %s\n", cmd.name, textLine(explain(env, err)))
	return exitCode(err)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "parley: end-to-end encrypted chat whose reliability you can see")
	fmt.Fprintln(w, "\nusage: parley COMMAND [flags] [args]\n\ncommands:")
	sorted := slices.Clone(commandTable)
	slices.SortFunc(sorted, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	width := 0
	for _, c := range sorted {
		width = max(width, len(c.name))
	}
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun \"parley COMMAND --help\" for a command's flags, \"parley version\" for this build.")
	fmt.Fprintln(w, "Exit codes: 0 done, 1 error, 2 usage, 3 message kept pending, 4 profile open in another process.")
}

// version is this build's version as the Makefile stamps it (make build:
// -ldflags "-X github.com/parley-chat/parley/cli.version=..."; git describe
// of the tree it was built from); empty in a build that did not stamp it.
var version string

// versionLine names this build, so that a bug report says what was run.
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return describeBuild(version, bi)
}

// describeBuild names a build: the stamped version; else the module version
// of a release built with go install; else the commit the go command
// recorded (with its time, and +modified for a tree with changes); else
// "(devel)", saying that nothing was stamped. The Go version ends the line.
func describeBuild(stamped string, bi *debug.BuildInfo) string {
	v := stamped
	var rev, at string
	dirty := false
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	line := "parley "
	switch {
	case v != "":
		line += v
	case rev != "":
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+modified"
		}
		line += "devel " + rev
		if at != "" {
			line += " " + at
		}
	default:
		line += "(devel, no version stamped: build with make build)"
	}
	if bi != nil && bi.GoVersion != "" {
		line += " " + bi.GoVersion
	}
	return line
}

// oneLine keeps an error message to one line, its control characters
// escaped: an error can carry text a relay or a peer chose.
func oneLine(err error) string { return textLine(err.Error()) }

// textLine is s on one line, its control characters escaped.
func textLine(s string) string {
	return wire.EscapeControls(strings.ReplaceAll(s, "\n", " "))
}
