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
}

// Main runs the command line args (without the program's name) with the
// process's standard streams and environment, and returns the exit code;
// ctx ends a long-running command (relay, tui, demo, sync --wait).
func Main(ctx context.Context, args []string) int {
	env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
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
		fmt.Fprintf(env.stderr, "parley %s: %s\nusage: parley %s %s\n", cmd.name, ue.msg, cmd.name, cmd.args)
		return exitUsage
	}
	fmt.Fprintf(env.stderr, "parley %s: %s\n", cmd.name, oneLine(err))
	return exitCode(err)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "parley: end-to-end encrypted chat whose reliability you can see")
	fmt.Fprintln(w, "\nusage: parley COMMAND [flags] [args]\n\ncommands:")
	sorted := slices.Clone(commandTable)
	slices.SortFunc(sorted, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun \"parley COMMAND --help\" for a command's flags, \"parley version\" for this build.")
	fmt.Fprintln(w, "Exit codes: 0 done, 1 error, 2 usage, 3 message kept pending, 4 profile open in another process.")
}

// versionLine names this build: the module version when it was built from
// a release, the commit it was built from otherwise, and the Go version.
func versionLine() string {
	v, rev, dirty := "(devel)", "", false
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	line := "parley " + v
	if len(rev) >= 12 {
		line += " " + rev[:12]
		if dirty {
			line += "+modified"
		}
	}
	if ok {
		line += " " + bi.GoVersion
	}
	return line
}

// oneLine keeps an error message to one line, its control characters
// escaped: an error can carry text a relay or a peer chose.
func oneLine(err error) string {
	return wire.EscapeControls(strings.ReplaceAll(err.Error(), "\n", " "))
}
