package main

import (
	"context"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/tui"
)

func init() {
	register(&command{name: "tui", args: "[--theme NAME]", summary: "the terminal interface for one profile", run: cmdTUI})
	register(&command{name: "demo", args: "[--theme NAME]", summary: "an embedded relay and two fresh profiles, alice/1 and bob/1, side by side", run: cmdDemo})
}

func tuiFlags(f *flags) (theme *string, logFile *string, debug *bool) {
	theme = f.String("theme", "dark", "colour theme: dark, light or high-contrast (NO_COLOR turns colours off)")
	logFile = f.String("log", "", "log file (default under the XDG state directory)")
	debug = f.Bool("debug", false, "log more")
	return
}

func cmdDemo(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["demo"], env, false)
	theme, logFile, debug := tuiFlags(f)
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	return tui.RunDemo(ctx, tui.Options{Theme: *theme, LogFile: *logFile, Debug: *debug})
}

func cmdTUI(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["tui"], env, true)
	theme, logFile, debug := tuiFlags(f)
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	dir := f.profileDir(env)
	pass, err := f.passphrase(env, false)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, dir, pass)
	if err != nil {
		return err
	}
	self, url, id, err := engine.LoadIdentity(ctx, st)
	if err != nil {
		st.Close()
		return err
	}
	// The relay connection reconnects on its own; the interface starts even
	// when the relay is not reachable yet.
	relay, err := transport.NewClient(url, self, id, transport.ClientOptions{})
	if err != nil {
		st.Close()
		return err
	}
	defer relay.Close()
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: relay})
	if err != nil {
		st.Close()
		return err
	}
	defer c.Close()
	return tui.Run(ctx, c, relay, tui.Options{Theme: *theme, LogFile: *logFile, Debug: *debug,
		ConnState: func() string { return relay.State().Conn.String() }})
}
