package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/parley-chat/parley/config"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/tui"
	"github.com/parley-chat/parley/tui/demo"
	"github.com/parley-chat/parley/wire"
)

// uiFlags are the flags of the interface commands.
type uiFlags struct {
	theme, logFile, configFile *string
	debug                      *bool
}

func tuiFlags(f *flags) uiFlags {
	return uiFlags{
		theme:      f.String("theme", "", "colour theme: dark, light or high-contrast (default: light or dark as the terminal's background); NO_COLOR turns colours off"),
		logFile:    f.String("log", "", "log file (default under the XDG state directory)"),
		configFile: f.String("config", "", "settings file (default $PARLEY_CONFIG, else "+config.DefaultPath()+")"),
		debug:      f.Bool("debug", false, "log more"),
	}
}

// settings reads the settings file, and the theme the flag or the file
// names; an unknown theme on the command line is a usage error.
func (u uiFlags) settings(env *cliEnv) (config.File, error) {
	path := *u.configFile
	if path == "" {
		path = env.getenv("PARLEY_CONFIG")
	}
	if path == "" {
		path = config.DefaultPath()
	}
	if *u.theme != "" {
		if _, err := themes.Get(*u.theme); err != nil {
			return config.File{}, usagef("--theme: %v", err)
		}
	}
	return config.Load(path)
}

func cmdTUI(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	ui := tuiFlags(f)
	commit := f.String("commit", "", "commit policy: on-read (the default: what the conversation in view shows), manual or auto (on arrival)")
	autoRetry := f.Bool("auto-retry", true, "retry pending sent messages by themselves (at a reconnection, after a convergence, and with a backoff)")
	bell := f.Bool("bell", true, "ring the terminal bell when a message arrives for a conversation not in view")
	desktop := f.Bool("desktop-notify", false, "also send a desktop notification through the terminal (OSC 777 and OSC 9)")
	title := f.Bool("title", true, "show the number of unread messages in the terminal's title")
	ops, err := f.parse(env, args, 0, 1)
	if err != nil {
		return err
	}
	peer := ""
	if len(ops) == 1 {
		a, err := parsePeer(ops[0])
		if err != nil {
			return usagef("%s", err)
		}
		peer = a.String()
	}
	file, err := ui.settings(env)
	if err != nil {
		return err
	}
	if *commit != "" {
		if _, err := engine.ParseCommitPolicy(*commit); err != nil {
			return usagef("--commit: %v", err)
		}
	}
	// The relay connection reconnects on its own; the interface starts even
	// when the relay is not reachable yet.
	p, err := f.openWith(ctx, env, profile.Options{Connect: profile.ConnectInBackground})
	if err != nil {
		return err
	}
	defer p.Close()

	// Flags set on the command line win over the settings file, which wins
	// over the defaults.
	s := file.For(p.Client.Self())
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	pick := func(name string, flagValue bool, fileValue *bool) bool {
		if set[name] {
			return flagValue
		}
		return config.Bool(fileValue, flagValue)
	}
	theme := s.Theme
	if *ui.theme != "" {
		theme = *ui.theme
	}
	policyName := s.Commit
	if *commit != "" {
		policyName = *commit
	}
	policy := engine.Policy{Commit: engine.CommitOnRead, AutoRetry: pick("auto-retry", *autoRetry, s.AutoRetry)}
	if policyName != "" {
		policy.Commit, _ = engine.ParseCommitPolicy(policyName) // checked above and by config.Load
	}
	p.Client.SetPolicy(policy)
	return tui.Run(ctx, p.Client, tui.Options{Theme: theme, LogFile: *ui.logFile, Debug: *ui.debug, Peer: peer,
		ConnState:     func() string { return p.RelayState().Conn.String() },
		Names:         s.DeviceNames(),
		Emoji:         tui.Emoji(s.Emoji),
		NoPreviews:    !config.Bool(s.Previews, true),
		Graphics:      s.Graphics,
		ImportCommand: func(link bool) string { return importCommand(f.profileDir(env), p, link) },
		LinkCommand:   "parley link --profile DIR --relay " + p.Relay.URL,
		LinkDevice:    tuiLinking(p),
		Notify: tui.Notify{
			Bell:    pick("bell", *bell, s.Notify.Bell),
			Desktop: pick("desktop-notify", *desktop, s.Notify.Desktop),
			Title:   pick("title", *title, s.Notify.Title),
		}})
}

// demoLease is how long the demo's relay waits for the acknowledgement of a
// delivered envelope before delivering it again. Holding delivery keeps a
// lease open until release, so it is long; a crash gives leases back at
// once (the connection closes).
const demoLease = 10 * time.Minute

// demoPassphrase protects the demo's throw-away profiles, with a cheap KDF:
// they live in a temporary directory for one run.
var (
	demoPassphrase = []byte("parley demo")
	demoKDF        = store.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}
)

func cmdDemo(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, false)
	ui := tuiFlags(f)
	recordFile := f.String("record", "", "write every event of both profiles to this file, as JSON lines with times")
	scriptFile := f.String("script", "", "play the demo actions in this file, one per line (send alice TEXT, hold both, commit bob, ...; docs/tui.md)")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	var script []demo.ScriptAction
	if *scriptFile != "" {
		in, err := os.Open(*scriptFile)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		script, err = demo.ParseScript(in)
		in.Close()
		if err != nil {
			return usagef("--script %s: %v", *scriptFile, err)
		}
	}
	file, err := ui.settings(env)
	if err != nil {
		return err
	}
	theme := file.Theme
	if *ui.theme != "" {
		theme = *ui.theme
	}
	// The demo stages its cases by hand: commits and retries are the
	// presenter's (ctrl+x c and ctrl+x r switch them), and nothing rings.
	opts := demo.Options{Options: tui.Options{Theme: theme, LogFile: *ui.logFile, Debug: *ui.debug,
		Emoji: tui.Emoji(file.Emoji)}, Script: script}
	if *recordFile != "" {
		out, err := os.OpenFile(*recordFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer out.Close()
		opts.Record = out // a line per write: what a crash cut short is kept
	}
	log, closeLog, err := tui.OpenLog(opts.Options)
	if err != nil {
		return err
	}
	defer closeLog()
	opts.Logger = log
	relay, err := startDemoRelay(log)
	if err != nil {
		return fmt.Errorf("demo: relay: %w", err)
	}
	defer relay.stop()
	return demo.Run(ctx, demoProfiles{url: relay.url, log: log}, opts)
}

// demoRelay is the demo's relay: a relayserver.Server on 127.0.0.1:0 that
// lets a new identity take over an address (the reinstall control) and
// keeps the accounts' device lists (a second device of bob's).
type demoRelay struct {
	srv  *relayserver.Server
	url  string
	done chan error
}

func startDemoRelay(log *slog.Logger) (*demoRelay, error) {
	srv, err := relayserver.NewMemory(relayserver.Config{
		AllowReregister: true,
		DeviceLists:     true, // bob's laptop (guided scenario 9)
		Limits:          relayserver.Limits{LeaseTimeout: demoLease},
		Logger:          log.With("part", "relay"),
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &demoRelay{srv: srv, url: "ws://" + ln.Addr().String(), done: make(chan error, 1)}
	go func() { r.done <- srv.Serve(ln) }()
	return r, nil
}

func (r *demoRelay) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	return errors.Join(err, <-r.done)
}

// demoProfiles gives the demo its profiles on package profile, all on one
// relay.
type demoProfiles struct {
	url string
	log *slog.Logger
}

func (d demoProfiles) options(who string, o demo.OpenOptions) profile.Options {
	return profile.Options{
		Passphrase: demoPassphrase,
		Connect:    profile.ConnectNow,
		Transport: transport.ClientOptions{Logger: d.log.With("part", "relay-client", "profile", who),
			MinBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second},
		Wrap:   o.Wrap,
		Engine: o.Engine,
		Store:  store.Options{KDF: demoKDF, Now: o.Engine.Now},
	}
}

// Create implements demo.Profiles.
func (d demoProfiles) Create(ctx context.Context, dir string, self engine.Address, o demo.OpenOptions) (demo.Profile, error) {
	p, err := profile.Create(ctx, dir, self, d.url, d.options(self.String(), o))
	if err != nil {
		return nil, err
	}
	return demoProfile{p}, nil
}

// Open implements demo.Profiles.
func (d demoProfiles) Open(ctx context.Context, dir string, o demo.OpenOptions) (demo.Profile, error) {
	p, err := profile.Open(ctx, dir, d.options(dir, o))
	if err != nil {
		return nil, err
	}
	return demoProfile{p}, nil
}

// CreateLinked implements demo.Profiles.
func (d demoProfiles) CreateLinked(ctx context.Context, dir string, id *engine.Identity, number uint32, pkg wire.LinkPackageData, o demo.OpenOptions) (demo.Profile, error) {
	if _, err := profile.CreateLinked(ctx, dir, d.url, id, number, pkg, engine.HistoryChoice{Mode: engine.HistoryAll}, d.options(fmt.Sprintf("%s/%d", pkg.List.User, number), o)); err != nil {
		return nil, err
	}
	return d.Open(ctx, dir, o)
}

// demoProfile is an open profile as the demo sees it.
type demoProfile struct{ p *profile.Profile }

func (d demoProfile) Engine() *engine.Client { return d.p.Client }
func (d demoProfile) RelayState() string     { return d.p.RelayState().Conn.String() }
func (d demoProfile) Close() error           { return d.p.Close() }

// downloadsDir is where the chat saves a downloaded file (its d key), for a
// fetch that looks for a file saved before.
func downloadsDir() string { return tui.DefaultDownloads() }
