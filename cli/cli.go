package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/adrg/xdg"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

// usageError is a command line that does not parse.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

var errHelp = errors.New("help shown")

// exitCode maps an error to the contract's exit codes.
func exitCode(err error) int {
	var notSent *engine.MessageNotSentError
	switch {
	case errors.As(err, &notSent):
		return exitPending
	case errors.Is(err, engine.ErrProfileOpen):
		return exitLocked
	}
	return exitError
}

// flags is a subcommand's flag set with the common profile flags.
type flags struct {
	*flag.FlagSet
	cmd            *command
	profile        *string
	passphraseFile *string
	// json is --json, for the commands that print records (false for the
	// others, which do not offer it).
	json *bool
	// network is set for commands that talk to the relay anyway; they also
	// do the prekey maintenance that is due.
	network bool
	// reader is set for a command (or a form of one) that only reads: when
	// another process holds the profile (a running parley tui), or the disk
	// is too full to open it for writing, it opens the profile for reading
	// (profile.OpenReader) instead of failing.
	reader bool
}

func newFlags(cmd *command, env *cliEnv, withProfile bool) *flags {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &flags{FlagSet: fs, cmd: cmd, json: new(bool)}
	if withProfile {
		f.profile = fs.String("profile", "", "profile directory (default $PARLEY_PROFILE, else under the XDG data directory)")
		f.passphraseFile = fs.String("passphrase-file", "", "read the passphrase from this file (default $PARLEY_PASSPHRASE, else a prompt)")
	}
	if !cmd.noJSON {
		f.json = fs.Bool("json", false, "print one JSON object per line")
	}
	return f
}

// parse parses flags anywhere among the arguments (flags follow the
// subcommand, before or after its operands; "--" ends them) and checks the
// operand count. A flag's value that does not parse is a usage error naming
// the flag and what it wants.
func (f *flags) parse(env *cliEnv, args []string, minArgs, maxArgs int) ([]string, error) {
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			f.printHelp(env.stdout)
			return nil, errHelp
		}
		if len(a) < 2 || a[0] != '-' {
			operands = append(operands, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := f.Lookup(name)
		if fl == nil {
			return nil, usagef("unknown flag --%s", name)
		}
		if !hasValue {
			if bf, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				value = "true"
			} else if i+1 >= len(args) {
				return nil, usagef("flag --%s needs a value", name)
			} else {
				i++
				value = args[i]
			}
		}
		if err := f.Set(name, value); err != nil {
			return nil, flagValueError(fl, value, err)
		}
	}
	switch {
	case len(operands) < minArgs:
		return nil, usagef("too few arguments")
	case maxArgs >= 0 && len(operands) > maxArgs:
		return nil, usagef("unexpected argument %s", textValue(operands[maxArgs]))
	}
	return operands, nil
}

// flagValueError is the usage error of a flag's value that did not parse:
// what the flag wants, in the words of its type.
func flagValueError(fl *flag.Flag, value string, err error) error {
	got := textValue(value)
	if g, ok := fl.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case int, int64, uint, uint64:
			if err.Error() == "value out of range" {
				return usagef("--%s %s is out of range", fl.Name, got)
			}
			return usagef("--%s %s is not a whole number", fl.Name, got)
		case float64:
			return usagef("--%s %s is not a number", fl.Name, got)
		case time.Duration:
			return usagef("--%s %s is not a duration (like 30s, 5m or 720h)", fl.Name, got)
		case bool:
			return usagef("--%s=%s: want true or false", fl.Name, got)
		}
	}
	return usagef("--%s %s: %v", fl.Name, got, err)
}

func (f *flags) printHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: parley %s [flags] %s\n\n%s\n\nflags:\n", f.cmd.name, f.cmd.args, f.cmd.summary)
	width := 0
	f.VisitAll(func(fl *flag.Flag) { width = max(width, len(fl.Name)) })
	f.VisitAll(func(fl *flag.Flag) {
		fmt.Fprintf(w, "  --%-*s  %s%s\n", width, fl.Name, fl.Usage, defaultNote(fl))
	})
}

// defaultNote is " (default X)" for a flag whose default is a value worth
// showing (not empty, false or 0) and whose usage does not say it already.
func defaultNote(fl *flag.Flag) string {
	switch fl.DefValue {
	case "", "false", "0":
		return ""
	}
	if strings.Contains(fl.Usage, "(default") {
		return ""
	}
	return " (default " + fl.DefValue + ")"
}

// profileDir resolves --profile, $PARLEY_PROFILE or the default profile.
func (f *flags) profileDir(env *cliEnv) string {
	dir := *f.profile
	if dir == "" {
		dir = env.getenv("PARLEY_PROFILE")
	}
	if dir == "" {
		dir = filepath.Join(xdg.DataHome, "parley", "default")
	}
	env.profileDir = dir
	return dir
}

// passphraseTries is how many times a prompt asks again after a wrong
// passphrase before the command gives up.
const passphraseTries = 3

// passphrase reads the passphrase of the profile in dir from
// --passphrase-file, $PARLEY_PASSPHRASE or, on a terminal, a prompt that
// names the profile; prompted reports whether it came from the prompt (and
// so may be asked again). confirm asks twice, for a new profile.
func (f *flags) passphrase(env *cliEnv, dir string, confirm bool) (pass []byte, prompted bool, err error) {
	if *f.passphraseFile != "" {
		b, err := os.ReadFile(*f.passphraseFile)
		if err != nil {
			return nil, false, readError("the passphrase file ", *f.passphraseFile, err)
		}
		return []byte(strings.TrimRight(string(b), "\r\n")), false, nil
	}
	if p := env.getenv("PARLEY_PASSPHRASE"); p != "" {
		return []byte(p), false, nil
	}
	if env.readSecret == nil {
		return nil, false, errors.New("no passphrase: use --passphrase-file or PARLEY_PASSPHRASE")
	}
	p, err := env.secret(fmt.Sprintf("passphrase for profile %s: ", dir))
	if err != nil {
		return nil, false, err
	}
	if confirm {
		q, err := env.secret("again: ")
		if err != nil {
			return nil, false, err
		}
		if string(p) != string(q) {
			return nil, false, errors.New("the passphrases differ")
		}
	}
	return p, true, nil
}

// secret prompts on stderr and reads a line without echo.
func (env *cliEnv) secret(prompt string) ([]byte, error) {
	fmt.Fprint(env.stderr, prompt)
	p, err := env.readSecret()
	fmt.Fprintln(env.stderr)
	if err != nil {
		return nil, fmt.Errorf("read passphrase: %w", err)
	}
	return p, nil
}

// open opens the profile named by the flags, connecting to its relay on
// first use; commands marked network also run the prekey maintenance that
// is due.
func (f *flags) open(ctx context.Context, env *cliEnv) (*profile.Profile, error) {
	return f.openWith(ctx, env, profile.Options{RefreshPreKeys: f.network})
}

// openWith opens the profile named by the flags with o and the passphrase;
// a passphrase typed at the prompt may be retyped after a wrong one.
func (f *flags) openWith(ctx context.Context, env *cliEnv, o profile.Options) (*profile.Profile, error) {
	dir := f.profileDir(env)
	for try := 1; ; try++ {
		pass, prompted, err := f.passphrase(env, dir, false)
		if err != nil {
			return nil, err
		}
		o.Passphrase = pass
		p, err := profile.Open(ctx, dir, o)
		if f.reader && (errors.Is(err, engine.ErrProfileOpen) || errors.Is(err, engine.ErrStorageFull)) {
			// Held by another process, or the disk too full to open it
			// for writing: read it as it is.
			p, err = profile.OpenReader(ctx, dir, o)
		}
		if prompted && try < passphraseTries && errors.Is(err, engine.ErrWrongPassphrase) {
			fmt.Fprintln(env.stderr, "wrong passphrase, try again")
			continue
		}
		if err == nil {
			env.relayURL = p.Relay.URL
			warnPlaintext(ctx, env, dir, p)
			if f.cmd == nil || (f.cmd.name != "link" && f.cmd.name != "restore") {
				warnImport(ctx, env, dir, p)
			}
		}
		return p, err
	}
}

// warnPlaintext warns about a profile made before plaintext relays were
// refused whose relay is ws:// to a host that is not loopback, and whose
// user never accepted it: a warning, not a refusal.
func warnPlaintext(ctx context.Context, env *cliEnv, dir string, p *profile.Profile) {
	s, err := p.RelaySettings(ctx)
	if err != nil {
		return
	}
	if host, plain := transport.Plaintext(s.URL); plain && !profile.InsecureRelayAllowed(dir, s.URL) {
		fmt.Fprintf(env.stderr, "parley: warning: the relay %s is plaintext ws:// to %s: anyone on the path sees who talks to whom and when; switch to wss:// with parley relay-settings --url, or accept it with --insecure-relay there\n", s.URL, host)
	}
}

// warnImport warns about a history import that stopped part way: the
// profile holds part of its history until the import is run again.
func warnImport(ctx context.Context, env *cliEnv, dir string, p *profile.Profile) {
	linked, ok, err := p.Client.UnfinishedImport(ctx)
	if err != nil || !ok {
		return
	}
	fmt.Fprintf(env.stderr, "parley: warning: this profile's history import stopped part way; run %s again to finish it\n", importCommand(dir, p, linked))
}

// importCommand is the command that finishes a history import that
// stopped part way: the link again for a linked device's history, the
// restore again for a backup's.
func importCommand(dir string, p *profile.Profile, linked bool) string {
	if linked {
		return "parley link --profile " + dir + " --relay " + p.Relay.URL
	}
	return "parley restore FILE --profile " + dir + " --relay URL"
}

// closeProfile ends a command: what it printed was the presentation of its
// events, so they are taken off the channel and marked presented (not by a
// reader beside the holder: see profile.PresentAll).
func closeProfile(p *profile.Profile) {
	_ = p.PresentAll(context.Background())
	p.Close()
}

// peerCommand parses a command whose first of n operands is a device address
// and opens the profile; the caller closes it.
func (f *flags) peerCommand(ctx context.Context, env *cliEnv, args []string, n int) (engine.Address, []string, *profile.Profile, error) {
	ops, err := f.parse(env, args, n, n)
	if err != nil {
		return engine.Address{}, nil, nil, err
	}
	peer, err := parsePeer(ops[0])
	if err != nil {
		return engine.Address{}, nil, nil, err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return engine.Address{}, nil, nil, err
	}
	return peer, ops, p, nil
}

// parsePeer parses a device address operand.
func parsePeer(s string) (engine.Address, error) {
	a, err := engine.ParseAddress(s)
	var ae *engine.AddressError
	if errors.As(err, &ae) {
		return engine.Address{}, fmt.Errorf("%q is not a device address: %s", s, ae.Reason)
	} else if err != nil {
		return engine.Address{}, err
	}
	return a, nil
}

// parseID parses a logical ID: 32 lowercase hex digits.
func parseID(s string) (wire.LogicalID, error) {
	var id wire.LogicalID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("%q is not a message ID (want 32 hex digits)", s)
	}
	copy(id[:], b)
	return id, nil
}

func hexID(id wire.LogicalID) string { return hex.EncodeToString(id[:]) }

// printer writes one result per line, as JSON with --json or as text.
type printer struct {
	w    io.Writer
	json bool
}

func (p printer) record(fields []kv) {
	if p.json {
		// encoding/json escapes C0 controls but leaves DEL, C1 and the
		// bidirectional controls raw; they can only stand inside strings,
		// where \uXXXX decodes to the same value.
		b, _ := json.Marshal(orderedJSON(fields))
		fmt.Fprintln(p.w, wire.EscapeControls(string(b)))
		return
	}
	var parts []string
	for _, f := range fields {
		parts = append(parts, fmt.Sprintf("%s=%v", f.k, textValue(f.v)))
	}
	fmt.Fprintln(p.w, strings.Join(parts, " "))
}

type kv struct {
	k string
	v any
}

// orderedJSON marshals fields in their given order.
type orderedJSON []kv

func (o orderedJSON) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// textValue is a value in the text form: a string with spaces, quotes or
// control characters is quoted as a JSON string, with every control
// character (wire.IsControl) escaped, so that a body or a relay's message
// never drives the terminal (clear it, hide text, write the clipboard).
func textValue(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" || strings.ContainsAny(x, " \t\n\"") || wire.HasControl(x) {
			q, _ := json.Marshal(x)
			return wire.EscapeControls(string(q))
		}
		return x
	}
	return wire.EscapeControls(fmt.Sprint(v))
}

// bodyFields returns the body as text (when it is UTF-8) and base64.
func bodyFields(body []byte) []kv {
	text := ""
	if utf8.Valid(body) {
		text = string(body)
	}
	return []kv{{"body", text}, {"body_b64", base64.StdEncoding.EncodeToString(body)}}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// readBody returns the message body: the operand, or stdin for "-".
func readBody(env *cliEnv, arg string) ([]byte, error) {
	if arg != "-" {
		return []byte(arg), nil
	}
	b, err := io.ReadAll(bufio.NewReader(io.LimitReader(env.stdin, wire.MaxBodySize+1)))
	if err != nil {
		return nil, fmt.Errorf("read body from stdin: %w", err)
	}
	return b, nil
}
