package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/transport"
)

// Commands about the profile itself: making it, its identity and its trust
// in peers' identities, and pruning what it keeps.

func init() {
	register(&command{name: "init", args: "--address ADDR --relay URL", summary: "make a profile and publish its prekey bundle; prints the identity fingerprint", run: cmdInit})
	register(&command{name: "identity", args: "", summary: "print the own address and identity fingerprint", run: cmdIdentity})
	register(&command{name: "safety-number", args: "PEER", summary: "print the safety number with PEER's pinned identity", run: cmdSafetyNumber})
	register(&command{name: "trust", args: "PEER", summary: "accept PEER's changed identity (then retry to resend)", run: cmdTrust})
	register(&command{name: "prune", args: "--older-than DUR", summary: "delete finalized records older than DUR", run: cmdPrune})
}

func cmdInit(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["init"], env, true)
	addrFlag := f.String("address", "", "this device's address, user/device")
	relayFlag := f.String("relay", "", "relay URL, ws://HOST:PORT")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *addrFlag == "" || *relayFlag == "" {
		return usagef("--address and --relay are required")
	}
	self, err := parsePeer(*addrFlag)
	if err != nil {
		return err
	}
	dir := f.profileDir(env)
	pass, err := f.passphrase(env, true)
	if err != nil {
		return err
	}
	p, err := profile.Create(ctx, dir, self, *relayFlag, profile.Options{Passphrase: pass})
	if err != nil {
		return err
	}
	key := p.Client.Identity()
	published := true
	if err := p.Client.Maintain(ctx); err != nil {
		if errors.Is(err, transport.ErrAddressTaken) {
			// The relay says so: this profile could never connect.
			p.Close()
			if rerr := profile.Remove(dir); rerr != nil {
				return fmt.Errorf("%s is registered at the relay to another identity (and removing %s failed: %v)", self, dir, rerr)
			}
			return fmt.Errorf("%s is registered at the relay to another identity: choose another address (nothing was kept)", self)
		}
		published = false
		fmt.Fprintf(env.stderr, "parley init: bundle not published yet (%s); the first command that reaches the relay publishes it\n", oneLine(err))
	}
	defer closeProfile(p)
	printer{env.stdout, *f.json}.record([]kv{{"address", self.String()}, {"fingerprint", key.Fingerprint()}, {"published", published}})
	return nil
}

func cmdIdentity(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["identity"], env, true)
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	printer{env.stdout, *f.json}.record([]kv{{"address", p.Client.Self().String()}, {"fingerprint", p.Client.Identity().Fingerprint()}})
	return nil
}

func cmdSafetyNumber(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["safety-number"], env, true)
	peer, _, p, err := f.peerCommand(ctx, env, args, 1)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	n, err := p.Client.SafetyNumber(ctx, peer)
	if err != nil {
		return err
	}
	printer{env.stdout, *f.json}.record([]kv{{"peer", peer.String()}, {"safety_number", n}})
	return nil
}

func cmdTrust(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["trust"], env, true)
	f.network = true
	peer, _, p, err := f.peerCommand(ctx, env, args, 1)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	key, err := p.Client.AcceptIdentity(ctx, peer)
	if err != nil {
		return err
	}
	n, _ := p.Client.SafetyNumber(ctx, peer)
	printer{env.stdout, *f.json}.record([]kv{{"peer", peer.String()}, {"fingerprint", key.Fingerprint()}, {"safety_number", n}})
	return nil
}

func cmdPrune(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["prune"], env, true)
	older := f.Duration("older-than", 0, "prune finalized records older than this (for example 720h)")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *older <= 0 {
		return usagef("--older-than is required and must be positive")
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	n, err := p.Client.Prune(ctx, *older)
	if err != nil {
		return err
	}
	printer{env.stdout, *f.json}.record([]kv{{"pruned", n}})
	return nil
}
