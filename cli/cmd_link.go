package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/tui"
	"github.com/parley-chat/parley/wire"
)

// Linking a second device (issue 33): `parley link` on the new device,
// `parley device add CODE` on the device that holds the account key. Both
// print the same six digits; each side changes its profile once, at its
// end, so that a ceremony that stops leaves both as they were.

// linkWait bounds each wait for the other device: the mailbox's life.
const linkWait = 10 * time.Minute

// confirmDigits asks the person to compare the digits, unless yes.
func confirmDigits(env *cliEnv, in *bufio.Reader, yes bool) error {
	if yes {
		return nil
	}
	fmt.Fprint(env.stderr, "do both screens show the same six digits? [yes/no] ")
	line, _ := in.ReadString('\n')
	if strings.TrimSpace(strings.ToLower(line)) != "yes" {
		return errors.New("not linked: the digits were not confirmed (nothing was changed)")
	}
	return nil
}

func cmdLink(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	relayFlag := f.String("relay", "", "the account's relay URL, ws://HOST:PORT or wss://HOST")
	yes := f.Bool("yes", false, "confirm the six digits without asking")
	historyFlag := f.String("history", "all", "what history to keep of what the other device sends: all, none, or the last N days (30d); the other device decides what it sends, and the groups come whatever is kept")
	batch := f.Int("batch", engine.ImportBatchRecords, "history records stored per transaction")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	keep, err := engine.ParseHistoryChoice(*historyFlag)
	if err != nil {
		return usagef("--history: %v", err)
	}
	if *relayFlag == "" {
		return usagef("--relay is required")
	}
	if err := transport.CheckURL(*relayFlag); err != nil {
		return usagef("--relay %s is not a relay URL: want ws://HOST:PORT or wss://HOST", textValue(*relayFlag))
	}
	dir := f.profileDir(env)
	env.relayURL = *relayFlag
	if profile.Exists(dir) {
		// A link killed after its profile was written goes on with its
		// history, keeping no more than it chose at the start (the
		// profile recorded that); any other profile is refused.
		return resumeLinkHistory(ctx, env, f, *batch, keep, fmt.Errorf("%s holds a profile already: link into a new directory", dir))
	}
	pass, _, err := f.passphrase(env, dir, true)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, linkWait)
	defer cancel()
	n, err := engine.NewLinkNew(engine.SystemRandom{})
	if err != nil {
		return err
	}
	box, err := transport.OpenProvisioning(ctx, *relayFlag, wire.MailboxID{}, transport.ClientOptions{})
	if err != nil {
		return fmt.Errorf("open a provisioning mailbox: %w", err)
	}
	defer box.Close()
	if err := box.Send(ctx, n.Hello()); err != nil {
		return err
	}
	out := printer{env.stdout, *f.json}
	out.record([]kv{{"code", n.Code(*relayFlag, box.Mailbox()).String()}})
	offer, err := box.Receive(ctx)
	if err != nil {
		return fmt.Errorf("waiting for the other device: %w", err)
	}
	check, o, err := n.TakeOffer(offer)
	if err != nil {
		return err
	}
	out.record([]kv{{"check", check}})
	if err := confirmDigits(env, bufio.NewReader(env.stdin), *yes); err != nil {
		return err
	}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		return err
	}
	if err := box.Send(ctx, n.Join(id)); err != nil {
		return err
	}
	pkgMsg, err := box.Receive(ctx)
	if err != nil {
		return fmt.Errorf("waiting for the account's package: %w", err)
	}
	pkg, err := n.TakePackage(pkgMsg)
	if err != nil {
		return err
	}
	self, err := profile.CreateLinked(ctx, dir, *relayFlag, id, o.Number, pkg, keep, profile.Options{Passphrase: pass})
	if err != nil {
		return err
	}
	if _, plain := transport.Plaintext(*relayFlag); plain {
		if err := profile.AllowInsecureRelay(dir, *relayFlag); err != nil {
			return fmt.Errorf("record the relay URL: %w", err)
		}
	}
	// Best effort: device 1 is told; the profile is whole already. The
	// history comes after, from the relay's blob store, not the mailbox.
	_ = box.Send(ctx, n.Done())
	if pkg.History != nil {
		if err := linkHistory(ctx, env, dir, pass, *batch, keep, *f.json); err != nil {
			return err
		}
	}
	out.record([]kv{{"address", self.String()}})
	return nil
}

// resumeLinkHistory goes on with the history import of a linked profile
// that a killed link left part way; without one, it returns refused.
func resumeLinkHistory(ctx context.Context, env *cliEnv, f *flags, batch int, keep engine.HistoryChoice, refused error) error {
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	err = importLinkHistory(ctx, env, p, batch, keep, *f.json)
	if errors.Is(err, engine.ErrNoLinkImport) {
		return refused
	}
	if err != nil {
		return err
	}
	printer{env.stdout, *f.json}.record([]kv{{"address", p.Client.Self().String()}})
	return nil
}

// linkHistory opens the profile just linked and imports its history.
func linkHistory(ctx context.Context, env *cliEnv, dir string, pass []byte, batch int, keep engine.HistoryChoice, json bool) error {
	p, err := profile.Open(ctx, dir, profile.Options{Passphrase: pass})
	if err != nil {
		return err
	}
	defer closeProfile(p)
	return importLinkHistory(ctx, env, p, batch, keep, json)
}

// importLinkHistory downloads and imports the history, with progress on
// stderr when it is a terminal, then prints messages=N groups=G bytes=B.
func importLinkHistory(ctx context.Context, env *cliEnv, p *profile.Profile, batch int, keep engine.HistoryChoice, json bool) error {
	bar := &progressLine{env: env}
	st, err := p.Client.ImportLinkHistory(ctx, batch, keep, func(stage string, done, total int64) {
		bar.show("history: %s %d of %d", stage, done, total)
	})
	bar.done()
	if err != nil {
		if errors.Is(err, engine.ErrNoLinkImport) {
			return err
		}
		return fmt.Errorf("linked, but the history stopped (run parley link again to go on): %w", err)
	}
	printer{env.stdout, json}.record([]kv{{"messages", st.Messages}, {"groups", st.Groups}, {"bytes", st.Bytes}})
	return nil
}

func cmdDevice(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	yes := f.Bool("yes", false, "confirm without asking (the six digits, or the removal)")
	historyFlag := f.String("history", "all", "for add: the history the new device gets: all, none, or the last N days (30d); this device decides (the groups go whatever the choice)")
	ops, err := f.parse(env, args, 2, 2)
	if err != nil {
		return err
	}
	if ops[0] == "remove" {
		return deviceRemove(ctx, env, f, ops[1], *yes)
	}
	choice, err := engine.ParseHistoryChoice(*historyFlag)
	if err != nil {
		return usagef("--history: %v", err)
	}
	if ops[0] != "add" {
		return usagef("parley device add CODE or parley device remove USER/N: %s is not a subcommand", textValue(ops[0]))
	}
	code, err := engine.ParseLinkCode(strings.TrimPrefix(strings.TrimSpace(ops[1]), "code="))
	if err != nil {
		return usagef("%s is not a code that parley link printed", textValue(ops[1]))
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	if code.Relay != p.Relay.URL {
		return fmt.Errorf("the new device uses the relay %s, this profile %s: link it with --relay %s", textValue(code.Relay), textValue(p.Relay.URL), textValue(p.Relay.URL))
	}
	ctx, cancel := context.WithTimeout(ctx, linkWait)
	defer cancel()
	box, err := transport.OpenProvisioning(ctx, code.Relay, code.Mailbox, transport.ClientOptions{})
	if err != nil {
		return fmt.Errorf("join the new device's mailbox: %w", err)
	}
	defer box.Close()
	link, err := p.Client.BeginLink(ctx, code, box)
	if err != nil {
		return err
	}
	out := printer{env.stdout, *f.json}
	out.record([]kv{{"check", link.Check()}})
	if err := confirmDigits(env, bufio.NewReader(env.stdin), *yes); err != nil {
		return err
	}
	bar := &progressLine{env: env}
	res, err := link.Finish(ctx, choice, profile.AcceptsAll(p.Dir), func(stage string, done, total int64) {
		bar.show("history: %s %d of %d", stage, done, total)
	})
	bar.done()
	if err != nil {
		return err
	}
	sum := res.History
	if res.ArchiveLeftOut != nil {
		fmt.Fprintf(env.stderr, "parley device add: warning: %s is linked without its archive: %s\n", res.Device, textLine(explain(env, res.ArchiveLeftOut)))
	}
	out.record([]kv{{"linked", res.Device.String()}, {"generation", res.List.Generation},
		{"history", choice.String()}, {"messages", sum.Messages}, {"groups", sum.Groups}, {"bytes", sum.Bytes}})
	return nil
}

// tuiLinking is the chat's devices panel's way to the relay for linking
// by code: it joins the mailbox the code names, on the profile's relay
// only, as parley device add does.
func tuiLinking(p *profile.Profile) *tui.DeviceLinking {
	return &tui.DeviceLinking{
		Join: func(ctx context.Context, code engine.LinkCode) (tui.LinkMailbox, error) {
			if code.Relay != p.Relay.URL {
				return nil, fmt.Errorf("the new device uses the relay %s, this profile %s: link it with --relay %s", textValue(code.Relay), textValue(p.Relay.URL), textValue(p.Relay.URL))
			}
			box, err := transport.OpenProvisioning(ctx, code.Relay, code.Mailbox, transport.ClientOptions{})
			if err != nil {
				return nil, fmt.Errorf("join the new device's mailbox: %w", err)
			}
			return box, nil
		},
		AcceptAll: func() bool { return profile.AcceptsAll(p.Dir) },
	}
}
